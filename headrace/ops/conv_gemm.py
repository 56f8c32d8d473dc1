"""Convolution as matrix products (the arithmetic behind ``ops/conv.py``'s kernels).

im2col copies the input's windows, taken as strided views (``sliding_window_view``), into a
column matrix once; every convolution product is then one (batched) matmul.  Two layouts, each
where it is fastest:

- **per sample** (forward): columns [N, g, C/g*kh*kw, OH*OW]; ``Filter_g @ columns`` is one
  batched matmul whose result [N, g, M/g, OH*OW] already is NCHW: no output transpose.
- **batch innermost** (gradients): columns [g, C/g*kh*kw, OH*OW*N] from the input transposed to
  [C, H, W, N] once.  Filter@GRAD is one GEMM of Output@GRAD (laid out the same way) with the
  columns; Input@GRAD scatter-adds ``Filter^T @ Output@GRAD`` back over the kh*kw window offsets
  (col2im), each add running over contiguous OW*N blocks instead of rows of OW.

Functions take NCHW arrays (views are fine); pads are (top, bottom, left, right).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _pad(x, pads, h_axis):
    """``x`` zero-padded on axes ``h_axis`` and ``h_axis + 1`` by (top, bottom, left, right)."""
    top, bottom, left, right = pads
    if not (top or bottom or left or right):
        return x
    widths = [(0, 0)] * x.ndim
    widths[h_axis], widths[h_axis + 1] = (top, bottom), (left, right)
    return np.pad(x, widths)


def _window_view(x, h_axis, ksize, strides, dilations):
    """Strided view of padded ``x`` with the windows' (kh, kw) axes last: [..., OH, OW, ..., kh, kw]."""
    (kh, kw), (sh, sw), (dh, dw) = ksize, strides, dilations
    view = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(h_axis, h_axis + 1))
    index = [slice(None)] * view.ndim
    index[h_axis], index[h_axis + 1], index[-2], index[-1] = slice(None, None, sh), slice(None, None, sw), \
        slice(None, None, dh), slice(None, None, dw)
    return view[tuple(index)]


def columns_per_sample(x, ksize, strides, pads, dilations, groups):
    """[N, g, C/g*kh*kw, OH*OW] columns of NCHW ``x`` (one copy) and (OH, OW)."""
    win = _window_view(_pad(x, pads, 2), 2, ksize, strides, dilations)      # [N, C, OH, OW, kh, kw]
    n, c, oh, ow, kh, kw = win.shape
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, groups, c // groups * kh * kw, oh * ow)
    return cols, (oh, ow)


def columns_batch_last(x, ksize, strides, pads, dilations, groups):
    """[g, C/g*kh*kw, OH*OW*N] columns of NCHW ``x`` (a transpose copy, then one copy)."""
    xt = _pad(np.ascontiguousarray(x.transpose(1, 2, 3, 0)), pads, 1)    # [C, H, W, N]
    win = _window_view(xt, 1, ksize, strides, dilations)                     # [C, OH, OW, N, kh, kw]
    c, oh, ow, n, kh, kw = win.shape
    return win.transpose(0, 4, 5, 1, 2, 3).reshape(groups, c // groups * kh * kw, oh * ow * n)


def batch_last(y):
    """NCHW ``y`` [N, M, OH, OW] as a contiguous [M, OH*OW*N] (the gradients' layout)."""
    n, m, oh, ow = y.shape
    return np.ascontiguousarray(y.transpose(1, 2, 3, 0)).reshape(m, oh * ow * n)


def col2im_batch_last(dcols, hw, strides, pads, dilations):
    """Adjoint of ``columns_batch_last``: scatter-add ``dcols`` [C, kh, kw, OH, OW, N] into the
    padded input, cropped: an NCHW view [N, C, H, W] of a [C, H, W, N] array."""
    c, kh, kw, oh, ow, n = dcols.shape
    (h, w), (top, bottom, left, right) = hw, pads
    (sh, sw), (dh, dw) = strides, dilations
    padded = np.zeros((c, h + top + bottom, w + left + right, n), dcols.dtype)
    for i in range(kh):
        for j in range(kw):
            padded[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += dcols[:, i, j]
    return padded[:, top:top + h, left:left + w].transpose(3, 0, 1, 2)
