import pytest

from headrace.core import context


@pytest.fixture
def dygraph(fresh_programs):
    """Run a test in dygraph mode (the top-level fixture restores static mode afterwards)."""
    with context.static_mode_guard(False):
        yield
