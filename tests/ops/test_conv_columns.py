"""The flat-row columns of stride-1 convolutions (ops/conv_columns.py): which convolutions take
them, that their junk columns never reach an output (values, NaN and inf included), and that
they give the window layout's values on every geometry, with a bias and on the batch-of-one path."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import conv_columns, conv_gemm
from tests.ops.test_conv import conv_reference

RNG = np.random.default_rng(29)

GEOMETRIES = [  # (input shape, filter shape, pads (top, bottom, left, right), dilations, groups)
    ((3, 4, 16, 16), (5, 4, 3, 3), (1, 1, 1, 1), (1, 1), 1),     # a ResNet block's conv
    ((4, 3, 13, 13), (6, 3, 3, 3), (0, 0, 0, 0), (1, 1), 1),     # LeNet's second conv
    ((2, 6, 11, 14), (4, 3, 3, 3), (2, 0, 1, 3), (1, 1), 2),     # groups, uneven pads
    ((2, 3, 12, 15), (4, 3, 3, 2), (1, 2, 0, 1), (2, 3), 1),     # dilations
    ((2, 4, 5, 7), (3, 4, 1, 1), (0, 0, 0, 0), (1, 1), 1),       # 1x1: no junk at all
    ((2, 2, 3, 9), (2, 2, 3, 4), (0, 0, 0, 0), (1, 1), 1),       # one output row
    ((1, 2, 6, 1), (3, 2, 2, 1), (0, 0, 0, 0), (1, 1), 1),       # one output column
]


def _layout(flat_junk, monkeypatch):
    monkeypatch.setattr(conv_columns, "FLAT_JUNK", flat_junk)
    monkeypatch.setattr(conv_columns, "FLAT_ROWS_PER_FILTER", 0 if flat_junk >= 1 else conv_columns.FLAT_ROWS_PER_FILTER)
    taken, real = [], conv_columns.columns
    monkeypatch.setattr(conv_columns, "columns", lambda *a: taken.append(type(real(*a))) or real(*a))
    return taken


def _convolve(x, w, pads, dilations, groups, bias=None):
    return conv_gemm.convolve(x, w, (1, 1), pads, dilations, groups, bias=bias)


def _reference(x, w, pads, dilations, groups):
    attrs = {"paddings": list(pads), "dilations": list(dilations), "groups": groups}
    return conv_reference({"Input": x.astype(np.float64), "Filter": w.astype(np.float64)}, attrs)["Output"]


@pytest.mark.parametrize("x_shape, w_shape, pads, dilations, groups", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flat_rows_give_the_window_layouts_values(monkeypatch, x_shape, w_shape, pads, dilations, groups, dtype):
    x, w = RNG.standard_normal(x_shape).astype(dtype), RNG.standard_normal(w_shape).astype(dtype)
    taken = _layout(1.0, monkeypatch)
    flat = _convolve(x, w, pads, dilations, groups)
    assert taken[-1] is conv_columns.FlatColumns
    monkeypatch.setattr(conv_columns, "FLAT_JUNK", -1.0)
    window = _convolve(x, w, pads, dilations, groups)
    assert taken[-1] is conv_columns.WindowColumns
    tol = 1e-5 if dtype == np.float32 else 1e-12
    expected = _reference(x, w, pads, dilations, groups)
    np.testing.assert_allclose(flat, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(window, expected, rtol=tol, atol=tol)
    assert flat.shape == window.shape and flat.dtype == dtype and flat.flags.c_contiguous


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_junk_columns_never_reach_an_output(monkeypatch, value):
    """Edge pixels are what the junk columns of the neighbouring row read: a NaN or inf there
    reaches exactly the outputs whose windows hold it."""
    _layout(1.0, monkeypatch)
    x, w = RNG.standard_normal((2, 2, 7, 6)), np.abs(RNG.standard_normal((3, 2, 3, 3))) + 0.1
    for row, col in [(0, 0), (2, 5), (4, 0), (6, 5), (3, 2)]:
        bad = x.copy()
        bad[1, 1, row, col] = value
        for pads in [(0, 0, 0, 0), (1, 1, 1, 1)]:
            out = _convolve(bad, w, pads, (1, 1), 1)
            probe = _reference(np.where(np.isfinite(bad), 0.0, 1.0), np.ones(w.shape), pads, (1, 1), 1) > 0
            np.testing.assert_array_equal(~np.isfinite(out), probe)
            np.testing.assert_allclose(out[probe == 0], _reference(bad, w, pads, (1, 1), 1)[probe == 0], rtol=1e-12)


def test_the_columns_junk_tail_is_zero_and_rows_are_the_windows():
    x = RNG.standard_normal((2, 3, 5, 6))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = conv_gemm._window_view(xp, 2, (3, 3), (1, 1), (1, 1)).transpose(0, 1, 4, 5, 2, 3)
    cols = conv_columns.FlatColumns(xp, (3, 3), (1, 1))
    assert (cols.oh, cols.ow, cols.pitch, cols.width) == (5, 6, 8, 40)
    per_sample = cols.per_sample(0, 2)
    assert per_sample.shape == (2, 27, 40)
    rows = per_sample.reshape(2, 27, 5, 8)
    assert not rows[:, :, -1, 6:].any()                     # the last row's junk: zero columns
    np.testing.assert_array_equal(rows[..., :6], win.reshape(2, 27, 5, 6))
    side = cols.side_by_side(0, 2).reshape(27, 2, 40)
    np.testing.assert_array_equal(side.transpose(1, 0, 2), per_sample)


@pytest.mark.parametrize("strides, pads, x_shape, filters, expected", [
    ((1, 1), (1, 1, 1, 1), (2, 8, 16, 16), 16, conv_columns.FlatColumns),     # 2 junk columns of 18, 72 rows
    ((1, 1), (0, 0, 0, 0), (2, 8, 13, 13), 16, conv_columns.WindowColumns),   # 2 of 13: too many
    ((2, 2), (1, 1, 1, 1), (2, 8, 16, 16), 16, conv_columns.WindowColumns),   # strided
    ((1, 1), (1, 1, 1, 1), (2, 8, 16, 16), 37, conv_columns.WindowColumns),   # 72 rows < 2 * 37 filters
])
def test_which_convolutions_take_flat_rows(monkeypatch, strides, pads, x_shape, filters, expected):
    taken = _layout(conv_columns.FLAT_JUNK, monkeypatch)
    w = RNG.standard_normal((filters, x_shape[1], 3, 3))
    conv_gemm.convolve(RNG.standard_normal(x_shape), w, strides, pads, (1, 1), 1)
    assert taken == [expected]


def test_an_unpadded_view_keeps_windows(monkeypatch):
    """Flat rows need the image's rows one pitch apart: an unpadded view (e.g. NHWC seen as NCHW)
    is read through windows instead of being copied first."""
    taken = _layout(1.0, monkeypatch)
    x = RNG.standard_normal((2, 9, 9, 3)).transpose(0, 3, 1, 2)
    w = RNG.standard_normal((4, 3, 3, 3))
    out = _convolve(x, w, (0, 0, 0, 0), (1, 1), 1)
    assert taken == [conv_columns.WindowColumns]
    np.testing.assert_allclose(out, _reference(x, w, (0, 0, 0, 0), (1, 1), 1), rtol=1e-12, atol=1e-12)


def test_bias_and_the_batch_of_one_path_on_flat_rows(monkeypatch):
    taken = _layout(1.0, monkeypatch)
    x, w, bias = RNG.standard_normal((1, 3, 40, 40)), RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal(4)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        for threads in (1, 2):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            with_bias = _convolve(x, w, (1, 1, 1, 1), (1, 1), 1, bias)
            plain = _convolve(x, w, (1, 1, 1, 1), (1, 1), 1)
            np.testing.assert_array_equal(with_bias, plain + bias.reshape(4, 1, 1))
            np.testing.assert_allclose(plain, _reference(x, w, (1, 1, 1, 1), (1, 1), 1), rtol=1e-12, atol=1e-12)
            assert plain.flags.c_contiguous
    finally:
        paddle.set_flags(old)
    assert set(taken) == {conv_columns.FlatColumns}
