import pytest

from headrace.core import context


@pytest.fixture(autouse=True)
def dygraph(fresh_programs):
    """Eager tests run in dygraph mode; the top-level fixture restores static mode afterwards."""
    with context.static_mode_guard(False):
        yield
