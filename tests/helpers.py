"""Shared test helpers: build a small program from feeds and run it; switch the default buffer plan;
switch check mode; a small tanh MLP."""
import contextlib
import sys

import headrace as paddle
import headrace.nn as nn
import headrace.static as static
from headrace.nn import functional as F
from headrace.runtime import Executor, Scope


def build_and_run(build, feeds):
    """Declare one data variable per feed (its exact shape/dtype), call ``build(**vars)``, run the
    program and return (fetched values, output Variables); ``build`` may return one or several."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        vars_ = {k: static.data(k, list(v.shape), v.dtype.name) for k, v in feeds.items()}
        outs = build(**vars_)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return Executor().run(main, feed=feeds, fetch_list=outs, scope=Scope()), outs


@contextlib.contextmanager
def buffer_reuse(on):
    """Run the block with ``FLAGS_executor_buffer_reuse`` set to ``on`` (the executor's default
    buffer plan for programs without one), restored afterwards."""
    import headrace as paddle
    old = paddle.get_flags("FLAGS_executor_buffer_reuse")
    paddle.set_flags({"FLAGS_executor_buffer_reuse": on})
    try:
        yield
    finally:
        paddle.set_flags(old)


def set_check_mode(monkeypatch, on):
    """Turn check mode (``HEADRACE_CHECK_KERNELS``, on in the suite) on or off in every module that
    reads it, as a run with or without it would, and empty the eager caches made in the other mode."""
    from headrace.eager import fast, runner
    for name, module in list(sys.modules.items()):
        if name.startswith("headrace") and getattr(module, "CHECK_KERNELS", None) is (not on):
            monkeypatch.setattr(module, "CHECK_KERNELS", on)
    runner._STEPS.clear()
    fast.FAST.clear()


class TanhMLP(nn.Layer):
    """``depth`` x (Linear(width, width) + tanh), loss = the mean of the output."""

    def __init__(self, width, depth):
        super().__init__()
        self.fcs = nn.LayerList([nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        for fc in self.fcs:
            x = F.tanh(fc(x))
        return paddle.mean(x)
