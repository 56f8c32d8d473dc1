"""Backward reuses one Step per (prepared gradient op, call site, NaN-check level): errors still
name the line that recorded each node, and turning the NaN/Inf check on between two backward
passes checks the second one."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core import context
from headrace.core.errors import KernelError, NonFiniteError
from headrace.ops.registry import lookup


def _sqrt_loss(x):
    return paddle.mean(paddle.sqrt(x))


def test_a_failing_gradient_names_the_line_of_its_own_node(monkeypatch):
    def broken(ins, attrs, ctx):
        raise RuntimeError("broken gradient")

    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.array([1.0, 4.0], "float32"), stop_gradient=False)
        first = paddle.tanh(x)                                  # line A
        second = paddle.tanh(x)                                 # line B: the same signature
        assert first._node.grad_ops is second._node.grad_ops  # one prepared op for both
        lines = [first._node.callsite, second._node.callsite]
        assert lines[0] != lines[1]
        monkeypatch.setattr(lookup("tanh_grad"), "kernel", broken)
        for out, line in ((first, lines[0]), (second, lines[1]), (first, lines[0])):
            with pytest.raises(KernelError) as info:
                paddle.mean(out).backward(retain_graph=True)
            assert f"test_grad_step_cache.py:{line.rpartition(':')[2]})" in str(info.value)
            assert "broken gradient" in str(info.value)


def test_turning_the_nan_check_on_between_two_backward_passes_checks_the_second():
    old = paddle.get_flags(["FLAGS_check_nan_inf", "FLAGS_check_nan_inf_level"])
    try:
        with context.static_mode_guard(False):
            x = paddle.to_tensor(np.array([1.0, 0.0], "float32"), stop_gradient=False)
            for _ in range(2):   # the same line twice: the same call site, Steps made unchecked
                loss = _sqrt_loss(x)
                with np.errstate(divide="ignore"):
                    loss.backward()                              # inf gradient, unchecked
            assert np.isinf(x.grad.numpy()[1])
            paddle.set_flags({"FLAGS_check_nan_inf": True})
            with pytest.raises(NonFiniteError, match=r"op `sqrt_grad`"):
                _sqrt_loss(x).backward()
    finally:
        paddle.set_flags(old)
