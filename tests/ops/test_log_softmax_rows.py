"""log_softmax along the last axis runs in row blocks on the intra-op threads (ops/softmax.py
``log_softmax_last``): against float64 formulas on shapes of several blocks, -inf/large rows,
the same bits for any thread count; other axes keep the general form."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(8)


def _run(x, dout, axis=-1):
    attrs = {**lookup("log_softmax").attrs, "axis": axis}
    out = lookup("log_softmax").kernel({"X": x}, attrs, context(["Out"]))["Out"]
    dx = lookup("log_softmax_grad").kernel({"Out": out, grad_slot("Out"): dout}, attrs,
                                           context([grad_slot("X")]))[grad_slot("X")]
    return out, dx


def _reference(x, dout, axis=-1):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return out, dout - np.exp(out) * dout.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape, axis", [((300, 1000), -1), ((4, 50, 700), 2), ((40, 30, 20), 1)])
def test_against_float64(shape, axis):
    x = (RNG.standard_normal(shape) * 8).astype(np.float32)
    x.reshape(-1)[:7] = [80, 85, -90, -np.inf, 50, 50, 0]      # large, tiny and -inf entries
    dout = RNG.standard_normal(shape).astype(np.float32)
    out, dx = _run(x, dout, axis)
    want_out, want_dx = _reference(x, dout.astype(np.float64), axis)
    assert out.dtype == dx.dtype == np.float32 and out.shape == dx.shape == shape
    finite = np.isfinite(want_out)
    np.testing.assert_array_equal(np.isfinite(out), finite)
    np.testing.assert_allclose(out[finite], want_out[finite], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4)


def test_bits_do_not_depend_on_the_thread_count():
    x = RNG.standard_normal((512, 1000)).astype(np.float32)
    dout = RNG.standard_normal(x.shape).astype(np.float32)
    old, runs = paddle.get_flags("FLAGS_paddle_num_threads"), set()
    try:
        for threads in (1, 2, 3):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            out, dx = _run(x, dout)
            runs.add(out.tobytes() + dx.tobytes())
    finally:
        paddle.set_flags(old)
    assert len(runs) == 1
