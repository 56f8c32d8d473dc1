import pytest

from headrace.core import context


@pytest.fixture
def eager(fresh_programs):
    """Run the test in dygraph mode (the top-level fixture restores static mode afterwards)."""
    with context.static_mode_guard(False):
        yield
