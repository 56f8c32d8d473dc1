"""Unfold/Fold, LPPool1D/2D, dropout1d and SyncBatchNorm: NumPy loop references written here,
both modes, gradients against central differences."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from tests.nn.layer_checks import both_modes, fd_grad

rng = np.random.default_rng(13)
nn = paddle.nn


def np_unfold(x, k, s, pads, d):
    """pads = (top, left, bottom, right), the reference's order."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ch * k[0] + i) * k[1] + j
                for a in range(oh):
                    for b in range(ow):
                        cols[:, row, a * ow + b] = xp[:, ch, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return cols


def np_fold(cols, size, k, s, pads, d):
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    h, w = size
    out = np.zeros((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]))
    oh = (h + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ch * k[0] + i) * k[1] + j
                for a in range(oh):
                    for b in range(ow):
                        out[:, ch, a * s[0] + i * d[0], b * s[1] + j * d[1]] += cols[:, row, a * ow + b]
    return out[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w]


def test_unfold_and_fold_layers():
    both_modes(lambda: nn.Unfold([2, 3], dilations=[1, 2], paddings=[1, 0, 0, 1], strides=[2, 1]),
               rng.standard_normal((2, 3, 5, 6)),
               lambda x, p: np_unfold(x, (2, 3), (2, 1), (1, 0, 0, 1), (1, 2)))
    cols = rng.standard_normal((2, 2 * 4, 15))
    both_modes(lambda: nn.Fold([4, 5], 2, strides=[1, 2], paddings=1),
               cols, lambda v, p: np_fold(v, (4, 5), (2, 2), (1, 2), (1, 1, 1, 1), (1, 1)))


def test_fold_unfold_gradients_and_round_trip():
    fd_grad(lambda t: F.unfold(t, 2, strides=1, paddings=1), [rng.standard_normal((1, 2, 3, 3))])
    fd_grad(lambda t: F.fold(t, [3, 4], [2, 2], strides=1), [rng.standard_normal((1, 4, 6))])
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    with context.static_mode_guard(False):
        back = F.fold(F.unfold(paddle.to_tensor(x), 2, strides=2), [4, 6], 2, strides=2)
    np.testing.assert_array_equal(back.numpy(), x)
    with context.static_mode_guard(False), pytest.raises(Exception, match="blocks"):
        F.fold(paddle.to_tensor(np.zeros((1, 4, 5), np.float32)), [4, 4], 2)


def np_lp_pool2d(x, p, k, s):
    n, c, h, w = x.shape
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = (x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]] ** p).sum(axis=(2, 3)) ** (1 / p)
    return out


def test_lp_pool():
    x = rng.uniform(0.5, 2.0, (2, 3, 5, 6))
    both_modes(lambda: nn.LPPool2D(3, [2, 3], stride=[1, 2]), x, lambda v, p: np_lp_pool2d(v, 3, (2, 3), (1, 2)))
    both_modes(lambda: nn.LPPool1D(2, 3), x[:, :, 0], lambda v, p: np_lp_pool2d(v[:, :, None], 2, (1, 3), (1, 3))[:, :, 0])
    fd_grad(lambda t: F.lp_pool2d(t, 1.5, 2), [x[:1]])
    with context.static_mode_guard(False):
        inf = F.lp_pool2d(paddle.to_tensor(x.astype(np.float32)), float("inf"), 2).numpy()
        np.testing.assert_allclose(inf, F.max_pool2d(paddle.to_tensor(x.astype(np.float32)), 2).numpy())
        with pytest.raises(ValueError, match="norm_type"):
            F.lp_pool1d(paddle.to_tensor(x[:, :, 0].astype(np.float32)), 0, 2)


def test_dropout1d():
    x = rng.uniform(1, 2, (6, 20, 5)).astype(np.float32)
    with context.static_mode_guard(False):
        paddle.seed(2)
        out = F.dropout1d(paddle.to_tensor(x), 0.5).numpy()
        zero = np.all(out == 0, axis=2)
        assert 0.2 < zero.mean() < 0.8
        np.testing.assert_allclose(out[~zero], 2 * x[~zero], rtol=1e-6)
        two_d = F.dropout1d(paddle.to_tensor(x[0]), 0.5).numpy()
        assert np.all(np.all(two_d == 0, axis=1) | np.all(two_d != 0, axis=1))


def test_sync_batch_norm_is_batch_norm_on_one_process():
    x = rng.standard_normal((4, 3, 2, 2))

    def reference(v, p):
        mean, var = v.mean(axis=(0, 2, 3), keepdims=True), v.var(axis=(0, 2, 3), keepdims=True)
        return (v - mean) / np.sqrt(var + 1e-5) * p[0].reshape(1, 3, 1, 1) + p[1].reshape(1, 3, 1, 1)
    both_modes(lambda: nn.SyncBatchNorm(3), x, reference)
    with context.static_mode_guard(False):
        net = nn.Sequential(nn.Conv2D(3, 3, 1), nn.BatchNorm2D(3))
        weight = net[1].weight
        converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert isinstance(converted[1], nn.SyncBatchNorm) and converted[1].weight is weight
        assert len(converted.parameters()) == 6


def np_temporal_shift(x, seg, ratio):
    nt, c, h, w = x.shape
    v = x.reshape(nt // seg, seg, c, h, w)
    out = np.zeros_like(v)
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    for t in range(seg):
        for ch in range(c):
            src = t - 1 if ch < c1 else (t + 1 if ch < c2 else t)
            if 0 <= src < seg:
                out[:, t, ch] = v[:, src, ch]
    return out.reshape(x.shape)


def test_temporal_shift():
    x = rng.standard_normal((6, 8, 2, 3))
    with context.static_mode_guard(False):
        got = F.temporal_shift(paddle.to_tensor(x), 3, 0.25).numpy()
        nhwc = F.temporal_shift(paddle.to_tensor(x.transpose(0, 2, 3, 1)), 2, 0.5, data_format="NHWC").numpy()
    np.testing.assert_array_equal(got, np_temporal_shift(x, 3, 0.25))
    np.testing.assert_array_equal(nhwc.transpose(0, 3, 1, 2), np_temporal_shift(x, 2, 0.5))
    fd_grad(lambda t: F.temporal_shift(t, 2, 0.25), [x[:4, :, :1, :2]])
