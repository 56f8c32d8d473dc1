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


_PLAIN_SCRIPT = '''
import numpy as np
import headrace as paddle
from headrace.core.errors import KernelError
from headrace.ops.registry import lookup
from headrace.ops.step import CHECK_KERNELS

def broken(ins, attrs, ctx):
    raise ZeroDivisionError("broken kernel")

assert not CHECK_KERNELS
paddle.disable_static()
x = paddle.to_tensor(np.array([1.0, 4.0], "float32"), stop_gradient=False)
y = paddle.tanh(x)          # its Step and record plan are made with the real kernels
np.testing.assert_allclose(y.numpy(), np.tanh([1.0, 4.0]), rtol=1e-6)
lookup("tanh_grad").kernel = broken   # before any Step of either op is made (Steps keep their kernel)
lookup("sigmoid").kernel = broken
for op in ("tanh_grad", "sigmoid"):
    try:
        paddle.mean(y).backward(retain_graph=True) if op == "tanh_grad" else paddle.nn.functional.sigmoid(x)
    except KernelError as exc:
        assert isinstance(exc, ZeroDivisionError) and "broken kernel" in str(exc), exc
        print(op, "wrapped:", " | ".join(str(exc).splitlines()))
'''


def test_outside_check_mode_kernels_are_called_directly_and_errors_still_wrapped(tmp_path):
    """The suite runs in check mode; the runner and backward call a plain Step's kernel directly
    outside it: errors are still the wrapped KernelError naming the op and the user's line."""
    import os
    import subprocess
    import sys

    script = tmp_path / "plain.py"
    script.write_text(_PLAIN_SCRIPT)
    env = dict(os.environ, HEADRACE_CHECK_KERNELS="0")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tanh_grad wrapped: op `tanh_grad`" in out.stdout and "the gradient of `tanh`" in out.stdout
    assert "sigmoid wrapped: op `sigmoid` (built at " in out.stdout and "plain.py:20)" in out.stdout
