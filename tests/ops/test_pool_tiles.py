"""Global pooling reduces each channel's row, adaptive bins of equal size and few cells run as
regular windows (ops/pool_tiles.py): the same values and gradients as the gather path they
replace (max exact, the first maximum taking the gradient on ties; averages to float rounding),
for NCHW and NHWC, both dtypes, NaN, and empty batches."""
import numpy as np
import pytest

from headrace.ops import pool2d as pool_ops
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

DX = grad_slot("X")
RNG = np.random.default_rng(13)


def _run(x, attrs):
    full = {**lookup("pool2d").attrs, **attrs}
    out = lookup("pool2d").kernel({"X": x}, full, context(["Out"]))["Out"]
    dout = RNG.standard_normal(out.shape).astype(x.dtype)
    dx = lookup("pool2d_grad").kernel({"X": x, "Out": out, grad_slot("Out"): dout}, full, context([DX]))[DX]
    return out, dout, dx


def _gathered(monkeypatch, x, attrs, dout):
    """The general (gather) path on the same input and Out@GRAD."""
    with monkeypatch.context() as patch:
        patch.setattr(pool_ops, "global_tile", lambda *a: None)
        patch.setattr(pool_ops, "as_regular", lambda attrs, *a: attrs)
        full = {**lookup("pool2d").attrs, **attrs}
        out = lookup("pool2d").kernel({"X": x}, full, context(["Out"]))["Out"]
        dx = lookup("pool2d_grad").kernel({"X": x, "Out": out, grad_slot("Out"): dout}, full, context([DX]))[DX]
    return out, dx


def _spy(monkeypatch):
    taken = []
    for name in ("pool_global", "max_grad_global", "avg_grad_global"):
        real = getattr(pool_ops, name)
        monkeypatch.setattr(pool_ops, name, lambda *a, _r=real, _n=name: taken.append(_n) or _r(*a))
    return taken


CASES = [  # (shape, attrs, fast path)
    ((4, 3, 7, 5), {"adaptive": True, "ksize": [1, 1]}, "global"),
    ((4, 3, 6, 6), {"global_pooling": True, "ksize": [3, 3]}, "global"),
    ((4, 3, 8, 12), {"adaptive": True, "ksize": [4, 3]}, "regular"),     # 2x4 bins
    ((4, 3, 14, 14), {"adaptive": True, "ksize": [7, 7]}, "regular"),    # 2x2 bins: pairs forward
    ((4, 3, 14, 14), {"adaptive": True, "ksize": [2, 2]}, "gather"),     # 7x7 bins: 49 cells
    ((4, 3, 7, 7), {"adaptive": True, "ksize": [3, 3]}, "gather"),       # unequal bins
]


@pytest.mark.parametrize("pooling", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, attrs, path", CASES)
def test_the_fast_paths_agree_with_gathering(monkeypatch, shape, attrs, path, pooling, dtype):
    x = np.round(RNG.standard_normal(shape) * 2).astype(dtype)     # many ties
    attrs = dict(attrs, pooling_type=pooling)
    taken = _spy(monkeypatch)
    out, dout, dx = _run(x, attrs)
    assert ("pool_global" in taken) == (path == "global")
    want_out, want_dx = _gathered(monkeypatch, x, attrs, dout)
    assert out.dtype == dx.dtype == dtype and out.shape == want_out.shape and dx.shape == x.shape
    if pooling == "max":
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(dx, want_dx)
        assert np.count_nonzero(dx) <= out.size       # one cell a window took its gradient
    else:
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, want_out, rtol=tol, atol=tol)
        np.testing.assert_allclose(dx, want_dx, rtol=tol, atol=tol)


def test_global_max_takes_the_first_maximum_and_a_nan_channel_none():
    x = np.array([[[[1.0, 3.0], [3.0, 2.0]], [[np.nan, 5.0], [np.nan, 1.0]]]], np.float32)
    out, dout, dx = _run(x, {"adaptive": True, "ksize": [1, 1]})
    assert out[0, 0, 0, 0] == 3.0 and np.isnan(out[0, 1, 0, 0])
    assert dx[0, 0].tolist() == [[0.0, dout[0, 0, 0, 0]], [0.0, 0.0]]
    assert not dx[0, 1].any()     # Out is NaN, which no cell equals (the reference's rule)


@pytest.mark.parametrize("attrs", [{"adaptive": True, "ksize": [1, 1]},            # global
                                   {"adaptive": True, "ksize": [3, 3]},            # gather (unequal bins)
                                   {"ksize": [2, 2], "strides": [2, 2]},           # strided loop
                                   {"ksize": [5, 5], "strides": [5, 5]}])          # gather (25 cells)
def test_a_window_holding_nan_gets_no_gradient_on_every_path(attrs):
    x = RNG.standard_normal((2, 3, 10, 10))
    x[1, 2, 4, 6] = np.nan
    out, dout, dx = _run(x, dict(attrs, pooling_type="max"))
    nan_windows = np.isnan(out)
    assert nan_windows.any()        # (one window, or two where adaptive bins overlap)
    assert not np.isnan(dx).any()
    assert dx[1, 2, 4, 6] == 0
    np.testing.assert_allclose(dx.sum(axis=(2, 3)), np.where(nan_windows, 0, dout).sum(axis=(2, 3)), rtol=1e-12)


@pytest.mark.parametrize("pooling", ["max", "avg"])
def test_channels_last_and_empty_batches(monkeypatch, pooling):
    x = RNG.standard_normal((3, 5, 4, 6))
    attrs = {"adaptive": True, "ksize": [1, 1], "pooling_type": pooling}
    out, dout, dx = _run(x, attrs)
    last = {**attrs, "data_format": "NHWC"}
    full = {**lookup("pool2d").attrs, **last}
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out_l = lookup("pool2d").kernel({"X": xl}, full, context(["Out"]))["Out"]
    dx_l = lookup("pool2d_grad").kernel({"X": xl, "Out": out_l, grad_slot("Out"): dout.transpose(0, 2, 3, 1)},
                                        full, context([DX]))[DX]
    np.testing.assert_allclose(out_l, out.transpose(0, 2, 3, 1), rtol=1e-12)
    np.testing.assert_allclose(dx_l, dx.transpose(0, 2, 3, 1), rtol=1e-12)
    empty_out, _, empty_dx = _run(np.zeros((0, 5, 4, 6)), attrs)
    assert empty_out.shape == (0, 5, 1, 1) and empty_dx.shape == (0, 5, 4, 6)
    want = x.reshape(3, 5, -1).max(-1) if pooling == "max" else x.reshape(3, 5, -1).mean(-1)
    np.testing.assert_allclose(out[:, :, 0, 0], want, rtol=1e-12)


@pytest.mark.parametrize("attrs", [{"ksize": [2, 2, 2], "strides": [2, 2, 2]},
                                   {"ksize": [1, 1, 1], "adaptive": True}])
def test_pool3d_gives_a_nan_window_no_gradient_either(attrs):
    x = RNG.standard_normal((2, 2, 4, 4, 4))
    x[1, 0, 1, 2, 3] = np.nan
    full = {**lookup("pool3d").attrs, **attrs, "pooling_type": "max"}
    out = lookup("pool3d").kernel({"X": x}, full, context(["Out"]))["Out"]
    dout = np.ones(out.shape)
    dx = lookup("pool3d_grad").kernel({"X": x, "Out": out, grad_slot("Out"): dout}, full, context([DX]))[DX]
    assert np.isnan(out).sum() == 1 and dx[1, 0, 1, 2, 3] == 0
    assert dx.sum() == out.size - 1       # every other window's gradient arrived once


def test_pool3d_a_nan_upstream_gradient_reaches_only_the_chosen_cells():
    x = np.arange(16.0).reshape(1, 1, 1, 4, 4)
    x[0, 0, 0, 3, 3] = np.nan
    full = {**lookup("pool3d").attrs, "ksize": [1, 2, 2], "strides": [1, 2, 2], "pooling_type": "max"}
    out = lookup("pool3d").kernel({"X": x}, full, context(["Out"]))["Out"]
    dx = lookup("pool3d_grad").kernel({"X": x, "Out": out, grad_slot("Out"): out.copy()}, full, context([DX]))[DX]
    assert not np.isnan(dx).any()                       # dOut is NaN for the NaN window only
    assert dx[0, 0, 0, 1, 1] == 5 and dx[0, 0, 0, 2:, 2:].tolist() == [[0, 0], [0, 0]]
