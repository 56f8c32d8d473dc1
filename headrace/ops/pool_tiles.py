"""Global pooling (every output the pooling of a whole channel) and adaptive bins of equal size,
for ``pool2d``'s kernels (``ops/pool2d.py``).

A global pooling reduces each channel's contiguous row of H*W values; its max gradient takes
``argmax`` of the row (the first maximum in row-major order, the other paths' rule) and writes
the gradient there, none for a row holding a NaN (as the other paths); its average gradient
broadcasts Out@GRAD / (H*W) over the row.  Adaptive bins of equal size and at most 16 cells are
regular windows (ksize == strides, no padding) and take the strided loop (``as_regular``).  The
general path for both gathers every window with index arrays, masks the cells with ``np.where``
and scatters with ``bincount``: ResNet's global average pool of [64, 256, 14, 14] was 8.1 ms
forward and 5.8 ms backward at one thread (now 1.1 and 0.7), its max 8.3 and 15.5 ms (1.3 and
2.0).  Max values and gradients are the general path's (the sign of a zero aside); averages sum
in another order (float rounding).  Larger unequal or non-global bins keep the gather path.
"""
from __future__ import annotations

import numpy as np


def global_tile(attrs, in_hw, out_hw):
    """(H, W) when every output is the pooling of a whole channel (global pooling, or adaptive to
    1 x 1), else None."""
    h, w = in_hw
    if tuple(out_hw) != (1, 1) or min(h, w) <= 0:
        return None
    if attrs["adaptive"] or attrs["global_pooling"]:
        return h, w
    return None


def as_regular(attrs, in_hw, out_hw, small_cells):
    """Adaptive bins of equal size (H, W multiples of the output's) of at most ``small_cells``
    cells are windows with ksize == strides and no padding: those attributes (the strided
    loop, or pairs for 2x2, instead of gathering every window), else ``attrs`` itself."""
    (h, w), (oh, ow) = in_hw, out_hw
    if not attrs["adaptive"] or attrs["global_pooling"] or min(h, w, oh, ow) <= 0 or h % oh or w % ow \
            or (oh, ow) == (1, 1):   # (global: ``global_tile``)
        return attrs
    kh, kw = h // oh, w // ow
    if kh * kw > small_cells:
        return attrs
    return dict(attrs, adaptive=False, ksize=[kh, kw], strides=[kh, kw], paddings=[0, 0],
                padding_algorithm="EXPLICIT", ceil_mode=False)


def pool_global(x, reduce):
    """[N, C, 1, 1] max (``reduce`` np.maximum) or sum (np.add) of each channel."""
    n, c, h, w = x.shape
    return reduce.reduce(x.reshape(n, c, h * w), axis=-1).reshape(n, c, 1, 1)


def max_grad_global(x, dout):
    """X@GRAD of a global max: each channel's gradient on its first maximum; none for a channel
    holding a NaN (its Out is NaN, which no cell equals: the reference's rule)."""
    n, c, h, w = x.shape
    rows = x.reshape(n, c, h * w)
    first = rows.argmax(axis=-1)[..., None]           # (the first NaN, where there is one)
    grad = dout.reshape(n, c, 1)
    nan = np.isnan(np.take_along_axis(rows, first, axis=-1))
    if nan.any():
        grad = np.where(nan, grad.dtype.type(0), grad)
    dx = np.zeros((n, c, h * w), dout.dtype)
    np.put_along_axis(dx, first, grad, axis=-1)
    return dx.reshape(n, c, h, w)


def avg_grad_global(scaled, hw):
    """X@GRAD of a global average: ``scaled`` [N, C, 1, 1] (Out@GRAD / count) on every cell."""
    n, c = scaled.shape[:2]
    dx = np.empty((n, c) + tuple(hw), scaled.dtype)
    dx[...] = scaled
    return dx
