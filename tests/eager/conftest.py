import pytest

import headrace as paddle
from headrace.core import context
from headrace.eager import fast, runner
from tests.helpers import set_check_mode


@pytest.fixture(autouse=True)
def dygraph(fresh_programs):
    """Eager tests run in dygraph mode; the top-level fixture restores static mode afterwards."""
    with context.static_mode_guard(False):
        yield


@pytest.fixture
def plain(monkeypatch):
    """Check mode off (the fast path on) in dygraph mode, as a run without HEADRACE_CHECK_KERNELS;
    yields ``monkeypatch``.  The eager caches are emptied before and after."""
    was_static = context.in_static_mode()
    set_check_mode(monkeypatch, False)
    paddle.disable_static()
    yield monkeypatch
    runner._STEPS.clear()
    fast.FAST.clear()
    if was_static:
        paddle.enable_static()
