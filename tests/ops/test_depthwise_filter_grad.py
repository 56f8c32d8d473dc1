"""Depthwise Filter@GRAD by per-sample window sums (ops/conv_gemm.py ``depthwise_filter_grad``):
the definition's values on every geometry (strides, dilations, asymmetric pads, a channel
multiplier of 2, NHWC), float64 finite differences, the same bits for any thread count; many
filters a group keep the im2col route."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import conv as conv_ops
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.gradcheck import check_grad

DW = grad_slot("Filter")
RNG = np.random.default_rng(21)

CASES = [  # (input shape, filter shape, attrs)
    ((3, 4, 9, 8), (4, 1, 3, 3), {"groups": 4, "paddings": [1, 1]}),
    ((2, 3, 11, 10), (6, 1, 3, 2), {"groups": 3, "paddings": [2, 0, 1, 1], "strides": [2, 1]}),
    ((2, 4, 12, 12), (4, 1, 3, 3), {"groups": 4, "dilations": [2, 3], "paddings": [2, 2]}),
    ((2, 7, 6, 4), (4, 1, 3, 3), {"groups": 4, "paddings": [1, 1], "data_format": "NHWC"}),
]


def _filter_grad(x, w, dout, attrs, op="depthwise_conv2d"):
    full = {**lookup(op).attrs, **attrs}
    return lookup(op + "_grad").kernel({"Input": x, "Filter": w, grad_slot("Output"): dout}, full, context([DW]))[DW]


def _output(x, w, attrs, op="depthwise_conv2d"):
    return lookup(op).kernel({"Input": x, "Filter": w}, {**lookup(op).attrs, **attrs}, context(["Output"]))["Output"]


@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_against_the_definition(x_shape, w_shape, attrs, monkeypatch):
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    dout = RNG.standard_normal(_output(x, w, attrs).shape)
    used, real = [], conv_ops.depthwise_filter_grad
    monkeypatch.setattr(conv_ops, "depthwise_filter_grad", lambda *a: used.append(1) or real(*a))
    fast = _filter_grad(x, w, dout, attrs)
    assert used and fast.shape == w.shape and fast.dtype == w.dtype
    general = _general(x, w, dout, attrs)
    np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-12)


def _general(x, w, dout, attrs):
    """Filter@GRAD by the definition: sum over samples and positions of Output@GRAD times the window."""
    channels_last = attrs.get("data_format") == "NHWC"
    xs = x.transpose(0, 3, 1, 2) if channels_last else x
    d = dout.transpose(0, 3, 1, 2) if channels_last else dout
    pads = attrs.get("paddings", [0, 0])
    pads = [pads[0], pads[0], pads[1], pads[1]] if len(pads) == 2 else pads
    (sh, sw), (dh, dw) = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    xp = np.pad(xs, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    m, _, kh, kw = w.shape
    mult = m // attrs["groups"]
    grad = np.zeros(w.shape)
    oh, ow = d.shape[2:]
    for f in range(m):
        for i in range(kh):
            for j in range(kw):
                win = xp[:, f // mult, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                grad[f, 0, i, j] = (d[:, f] * win).sum()
    return grad


def test_finite_differences():
    check_grad("depthwise_conv2d", {"Input": RNG.standard_normal((2, 3, 5, 5)), "Filter": RNG.standard_normal((6, 1, 3, 3))},
               {"groups": 3, "paddings": [1, 1], "strides": [2, 1]}, out_slots=("Output",))


def test_bits_do_not_depend_on_the_thread_count():
    x = RNG.standard_normal((16, 32, 24, 24)).astype(np.float32)
    w = RNG.standard_normal((32, 1, 3, 3)).astype(np.float32)
    dout = RNG.standard_normal((16, 32, 24, 24)).astype(np.float32)
    attrs = {"groups": 32, "paddings": [1, 1]}
    old, runs = paddle.get_flags("FLAGS_paddle_num_threads"), set()
    try:
        for threads in (1, 2, 3):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            runs.add(_filter_grad(x, w, dout, attrs).tobytes())
    finally:
        paddle.set_flags(old)
    assert len(runs) == 1
    np.testing.assert_allclose(_filter_grad(x, w, dout, attrs), _general(x, w, dout, attrs), rtol=2e-4, atol=2e-3)


def test_many_filters_a_group_keep_im2col(monkeypatch):
    monkeypatch.setattr(conv_ops, "depthwise_filter_grad", lambda *a: pytest.fail("fast route"))
    x, w = RNG.standard_normal((2, 1, 8, 8)), RNG.standard_normal((8, 1, 3, 3))   # one group of 8 filters
    dout = RNG.standard_normal(_output(x, w, {}, "conv2d").shape)
    np.testing.assert_allclose(_filter_grad(x, w, dout, {}, "conv2d"), _general(x, w, dout, {"groups": 1}),
                               rtol=1e-12, atol=1e-12)
