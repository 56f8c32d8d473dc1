"""The forward of 2x2 max pooling at stride 2 goes by pairs where the windows tile the input
(ops/pool_pairs.py): the same bits as the general loop over window offsets (signed zeros and NaN
included), on ties, odd sizes, views, both dtypes and any thread count; gradients unchanged."""
import numpy as np
import pytest

import headrace as paddle

from headrace.ops import parallel, pool2d as pool_ops, pool_pairs
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

_ATTRS = {**lookup("pool2d").attrs, "ksize": [2, 2], "strides": [2, 2]}
_DX = grad_slot("X")


def _forward(x, attrs=_ATTRS):
    return lookup("pool2d").kernel({"X": x}, attrs, context(["Out"]))["Out"]


def _grad(x, dout, out=None, attrs=_ATTRS):
    ins = {"X": x, grad_slot("Out"): dout}
    if out is not None:
        ins["Out"] = out
    return lookup("pool2d_grad").kernel(ins, attrs, context([_DX]))[_DX]


def _general(monkeypatch, fn, *args, **kw):
    with monkeypatch.context() as patch:
        patch.setattr(pool_ops, "pairs_apply", lambda *a: False)
        return fn(*args, **kw)


def _spy(monkeypatch):
    """The names of the pair functions that computed a result (not None)."""
    calls = []

    def wrap(name, real):
        def call(*args):
            result = real(*args)
            if result is not None:
                calls.append(name)
            return result
        return call
    monkeypatch.setattr(pool_ops, "max_pool_pairs", wrap("max_pool_pairs", pool_pairs.max_pool_pairs))
    return calls


def _tied(rng, shape, dtype):
    """relu'd values rounded to halves: many windows with tied maxima (zeros above all)."""
    return np.maximum(np.round(rng.standard_normal(shape) * 2) / 2, 0).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hw", [(8, 8), (9, 7), (2, 2), (3, 3), (6, 11)])
def test_pairs_match_the_general_path_on_ties(hw, dtype, monkeypatch):
    rng = np.random.default_rng(hw[0] * 31 + hw[1])
    x = _tied(rng, (3, 4) + hw, dtype)
    calls = _spy(monkeypatch)
    out = _forward(x)
    want_out = _general(monkeypatch, _forward, x)
    np.testing.assert_array_equal(out, want_out)
    assert out.dtype == dtype and out.flags.c_contiguous
    dout = (np.arange(out.size).reshape(out.shape) - out.size / 2).astype(dtype)   # both signs
    for given in (out, None):
        dx = _grad(x, dout, given)
        np.testing.assert_array_equal(dx, _general(monkeypatch, _grad, x, dout, given))
        assert dx.dtype == dtype and dx.shape == x.shape and dx.flags.c_contiguous
        # every window's gradient went to exactly one cell
        assert np.count_nonzero(dx) == np.count_nonzero(dout)
    assert calls == (["max_pool_pairs"] if hw[0] % 2 == 0 and hw[1] % 2 == 0 else [])


def test_signed_zeros_and_nan_keep_the_general_paths_bits(monkeypatch):
    rng = np.random.default_rng(7)
    x = rng.choice(np.array([-0.0, 0.0, -1.0, np.nan], np.float32), size=(8, 3, 6, 8), p=[0.45, 0.45, 0.07, 0.03])
    calls = _spy(monkeypatch)
    out, want = _forward(x), _general(monkeypatch, _forward, x)
    assert calls == ["max_pool_pairs"]
    assert np.isnan(out).any() and (out == 0).any()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))
    np.testing.assert_array_equal(out, want)


def test_ties_go_to_the_first_cell_in_row_major_order():
    x = np.array([[[[1, 1], [1, 1]], [[0, 2], [2, 2]], [[0, 0], [3, 3]], [[-0.0, 0.0], [0, 0]]]], np.float32)
    dx = _grad(x, np.array([[[[5]], [[6]], [[7]], [[8]]]], np.float32))
    want = [[[5, 0], [0, 0]], [[0, 6], [0, 0]], [[0, 0], [7, 0]], [[8, 0], [0, 0]]]
    np.testing.assert_array_equal(dx[0], np.array(want, np.float32))


def test_a_window_holding_nan_gets_no_gradient_as_on_the_general_path(monkeypatch):
    x = _tied(np.random.default_rng(1), (2, 3, 6, 6), np.float32)
    x[0, 1, 2, 3] = np.nan
    out = _forward(x)
    assert np.isnan(out[0, 1, 1, 1]) and np.isnan(out).sum() == 1
    dout = np.ones(out.shape, np.float32)
    for given in (out, None):
        dx = _grad(x, dout, given)
        np.testing.assert_array_equal(dx, _general(monkeypatch, _grad, x, dout, given))
        assert not dx[0, 1, 2:4, 2:4].any()


def test_strided_views_and_channels_last(monkeypatch):
    rng = np.random.default_rng(2)
    base = _tied(rng, (4, 3, 10, 12), np.float64)
    x = base[::2, :, 1:9, 2:]          # a view: not contiguous
    np.testing.assert_array_equal(_forward(x), _forward(np.ascontiguousarray(x)))
    out = _forward(x)
    dout = rng.standard_normal(out.shape)
    np.testing.assert_array_equal(_grad(x, dout, out), _general(monkeypatch, _grad, x, dout, out))
    nhwc = {**_ATTRS, "data_format": "NHWC"}
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(_forward(xl, nhwc), out.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(_grad(xl, dout.transpose(0, 2, 3, 1), None, nhwc),
                                  _grad(x, dout, out).transpose(0, 2, 3, 1))


@pytest.mark.parametrize("attrs", [{"paddings": [1, 1]}, {"ceil_mode": True}, {"strides": [1, 1]},
                                   {"ksize": [3, 3], "strides": [2, 2]}, {"pooling_type": "avg"}])
def test_other_poolings_do_not_take_pairs(attrs, monkeypatch):
    calls = _spy(monkeypatch)
    x = _tied(np.random.default_rng(3), (2, 2, 7, 7), np.float64)
    full = {**_ATTRS, **attrs}
    out = _forward(x, full)
    _grad(x, np.ones(out.shape), out, full)
    assert calls == []


def test_bits_do_not_depend_on_the_thread_count(monkeypatch):
    x = _tied(np.random.default_rng(4), (64, 16, 12, 12), np.float32)
    dout = np.random.default_rng(5).standard_normal((64, 16, 6, 6)).astype(np.float32)
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 1024)     # pieces even at this size
    results, old = [], paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        for threads in (1, 2, 3):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            out = _forward(x)
            results.append((out, _grad(x, dout, out)))
    finally:
        paddle.set_flags(old)
    for out, dx in results[1:]:
        np.testing.assert_array_equal(out, results[0][0])
        np.testing.assert_array_equal(dx, results[0][1])
