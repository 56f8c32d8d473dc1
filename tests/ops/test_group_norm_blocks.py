"""group_norm in blocks of whole samples on the intra-op threads (ops/group_norm.py): forward and
gradient against float64 formulas written here on shapes of several blocks, the same bits for
any thread count, NHWC, float16 statistics in float32."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(5)


def _reference(x, dy, groups, scale, bias, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mean, var = xg.mean(-1, keepdims=True), xg.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xhat = ((xg - mean) * rstd).reshape(x.shape)
    per = (1, c) + (1,) * (x.ndim - 2)
    y = xhat * scale.reshape(per) + bias.reshape(per)
    g = (dy * scale.reshape(per)).reshape(n, groups, -1)
    xh = xhat.reshape(n, groups, -1)
    dx = rstd * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))
    axes = (0,) + tuple(range(2, x.ndim))
    return y, dx.reshape(x.shape), (dy * xhat).sum(axis=axes), dy.sum(axis=axes)


def _run(x, dy, groups, scale, bias, layout="NCHW"):
    attrs = {**lookup("group_norm").attrs, "groups": groups, "data_layout": layout}
    fwd = lookup("group_norm").kernel({"X": x, "Scale": scale, "Bias": bias}, attrs, context(["Y", "Mean", "Variance"]))
    slots = [grad_slot(s) for s in ("X", "Scale", "Bias")]
    grads = lookup("group_norm_grad").kernel({"X": x, "Scale": scale, "Bias": bias, "Mean": fwd["Mean"],
                                              "Variance": fwd["Variance"], grad_slot("Y"): dy}, attrs, context(slots))
    return fwd["Y"], [grads[s] for s in slots]


@pytest.mark.parametrize("shape, groups", [((12, 8, 32, 32), 4), ((5, 6, 7), 3), ((9, 16, 12, 12), 16)])
def test_blocks_against_float64_formulas(shape, groups):
    x = RNG.standard_normal(shape) * 3 + 1
    dy = RNG.standard_normal(shape)
    scale, bias = RNG.standard_normal(shape[1]), RNG.standard_normal(shape[1])
    y, grads = _run(x, dy, groups, scale, bias)
    for got, want in zip((y, *grads), _reference(x, dy, groups, scale, bias)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
    y32, grads32 = _run(x32, dy32, groups, scale.astype(np.float32), bias.astype(np.float32))
    assert y32.dtype == np.float32 and all(g.dtype == np.float32 for g in grads32)
    for got, want in zip((y32, *grads32), _reference(x, dy, groups, scale, bias)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_bits_do_not_depend_on_the_thread_count_and_nhwc_agrees():
    x = RNG.standard_normal((12, 8, 32, 32)).astype(np.float32)
    dy = RNG.standard_normal(x.shape).astype(np.float32)
    scale, bias = RNG.standard_normal(8).astype(np.float32), RNG.standard_normal(8).astype(np.float32)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        runs = []
        for threads in (1, 2, 3):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            y, grads = _run(x, dy, 4, scale, bias)
            runs.append(b"".join(a.tobytes() for a in (y, *grads)))
    finally:
        paddle.set_flags(old)
    assert len(set(runs)) == 1
    y, grads = _run(x, dy, 4, scale, bias)
    y_l, grads_l = _run(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), np.ascontiguousarray(dy.transpose(0, 2, 3, 1)),
                        4, scale, bias, "NHWC")
    np.testing.assert_array_equal(y_l, y.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(grads_l[0], grads[0].transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(grads_l[1], grads[1])


def test_float16_statistics_in_float32():
    x = (RNG.standard_normal((4, 6, 10, 10)) * 50 + 300).astype(np.float16)
    dy = RNG.standard_normal(x.shape).astype(np.float16)
    scale, bias = np.ones(6, np.float16), np.zeros(6, np.float16)
    y, grads = _run(x, dy, 3, scale, bias)
    want = _reference(x.astype(np.float64), dy.astype(np.float64), 3, scale.astype(float), bias.astype(float))
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(float), want[0], atol=1e-2)
    np.testing.assert_allclose(grads[0].astype(float), want[1], rtol=2e-2, atol=2e-3)


def test_an_empty_group_has_nan_statistics_and_an_empty_gradient():
    import warnings
    x = np.zeros((2, 4, 0, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # (the forward's 0 / 0, as numpy's mean of nothing)
        attrs = {**lookup("group_norm").attrs, "groups": 2}
        fwd = lookup("group_norm").kernel({"X": x}, attrs, context(["Y", "Mean", "Variance"]))
    assert np.isnan(fwd["Mean"]).all() and fwd["Y"].shape == x.shape
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grads = lookup("group_norm_grad").kernel({"X": x, "Mean": fwd["Mean"], "Variance": fwd["Variance"],
                                                  grad_slot("Y"): x}, attrs, context([grad_slot("X")]))
    assert grads[grad_slot("X")].shape == x.shape


def test_blocks_hold_whole_samples():
    """rowblocks' ``align``: group_norm's blocks are whole samples (``groups`` rows each), sized
    from the shape alone."""
    from headrace.ops import rowblocks
    for rows, width, align in ((96, 8192, 4), (40, 1000, 8), (12, 100000, 3), (0, 10, 2)):
        spans = rowblocks.blocks(rows, width, align=align)
        assert all(start % align == 0 for start, _ in spans)
        assert [s for s, _ in spans[1:]] == [e for _, e in spans[:-1]] and (not rows or spans[-1][1] == rows)
        assert len(spans) == rowblocks.block_count(rows, width, align=align)
    assert rowblocks.blocks(96, 8192, align=4) == [(0, 8), (8, 16), (16, 24), (24, 32), (32, 40), (40, 48),
                                                   (48, 56), (56, 64), (64, 72), (72, 80), (80, 88), (88, 96)]
