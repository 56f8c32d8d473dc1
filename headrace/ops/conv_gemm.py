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

The copies (columns, transposes, col2im) are split over threads (``ops/parallel.py``) along an
axis they do not sum over (samples or channels): each element is computed by the same arithmetic
in the same order whatever the thread count, so results are bit-identical; the GEMMs run on the
same threads through ``ops/gemm.py``.  Functions take NCHW arrays (views are fine); pads are (top, bottom, left, right).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from . import parallel
from .gemm import bounds


def split_range(fn, size, elements):
    """``fn(start, stop)`` over contiguous pieces of ``range(size)`` covering it, on up to
    ``parallel.num_threads()`` threads when ``elements`` (the work's size) is worth it (pieces
    of at least ``parallel.MIN_ELEMENTS``, up to ``PIECES_PER_THREAD`` per thread, as ``chunked``)."""
    threads = parallel.num_threads()
    count = min(threads * parallel.PIECES_PER_THREAD, elements // parallel.MIN_ELEMENTS, size)
    if threads < 2 or count <= 1:
        fn(0, size)
        return
    parallel.run_pieces(fn, bounds(size, count))


def _window_view(x, h_axis, ksize, strides, dilations):
    """Strided view of padded ``x`` with the windows' (kh, kw) axes last: [..., OH, OW, ..., kh, kw]."""
    (kh, kw), (sh, sw), (dh, dw) = ksize, strides, dilations
    view = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(h_axis, h_axis + 1))
    index = [slice(None)] * view.ndim
    index[h_axis], index[h_axis + 1], index[-2], index[-1] = slice(None, None, sh), slice(None, None, sw), \
        slice(None, None, dh), slice(None, None, dw)
    return view[tuple(index)]


def _padded(shape, h_axis, pads, dtype):
    """An uninitialised array of ``shape`` grown by ``pads`` on axes ``h_axis``, ``h_axis + 1``,
    and the index of its interior."""
    top, bottom, left, right = pads
    full, inner = list(shape), [slice(None)] * len(shape)
    full[h_axis] += top + bottom
    full[h_axis + 1] += left + right
    inner[h_axis], inner[h_axis + 1] = slice(top, top + shape[h_axis]), slice(left, left + shape[h_axis + 1])
    return np.empty(full, dtype), tuple(inner)


def _fill_padded(padded, inner, source, start, stop):
    """``padded[start:stop]`` = zeros with ``source[start:stop]`` in its interior."""
    part = padded[start:stop]
    if any(s != slice(None) for s in inner):
        part[...] = 0
    part[inner] = source[start:stop]


def columns_per_sample(x, ksize, strides, pads, dilations, groups):
    """[N, g, C/g*kh*kw, OH*OW] columns of NCHW ``x`` (one copy) and (OH, OW)."""
    n, c = x.shape[:2]
    xp = x
    if any(pads):
        xp, inner = _padded(x.shape, 2, pads, x.dtype)
        split_range(lambda s, e: _fill_padded(xp, inner, x, s, e), n, xp.size)
    win = _window_view(xp, 2, ksize, strides, dilations).transpose(0, 1, 4, 5, 2, 3)   # [N, C, kh, kw, OH, OW]
    cols = np.empty(win.shape, x.dtype)

    def piece(start, stop):
        cols[start:stop] = win[start:stop]
    split_range(piece, n, cols.size)
    _, _, kh, kw, oh, ow = cols.shape
    return cols.reshape(n, groups, c // groups * kh * kw, oh * ow), (oh, ow)


def columns_batch_last(x, ksize, strides, pads, dilations, groups):
    """[g, C/g*kh*kw, OH*OW*N] columns of NCHW ``x`` (a transpose copy, then one copy)."""
    xt = x.transpose(1, 2, 3, 0)                                              # [C, H, W, N] view
    xp, inner = _padded(xt.shape, 1, pads, x.dtype)
    split_range(lambda s, e: _fill_padded(xp, inner, xt, s, e), xt.shape[0], xp.size)
    win = _window_view(xp, 1, ksize, strides, dilations).transpose(0, 4, 5, 1, 2, 3)  # [C, kh, kw, OH, OW, N]
    cols = np.empty(win.shape, x.dtype)

    def piece(start, stop):
        cols[start:stop] = win[start:stop]
    split_range(piece, cols.shape[0], cols.size)
    c, kh, kw = cols.shape[:3]
    return cols.reshape(groups, c // groups * kh * kw, -1)


def batch_last(y):
    """NCHW ``y`` [N, M, OH, OW] as a contiguous [M, OH*OW*N] (the gradients' layout)."""
    n, m, oh, ow = y.shape
    yt = y.transpose(1, 2, 3, 0)
    out = np.empty(yt.shape, y.dtype)

    def piece(start, stop):
        out[start:stop] = yt[start:stop]
    split_range(piece, m, out.size)
    return out.reshape(m, oh * ow * n)


def col2im_batch_last(dcols, hw, strides, pads, dilations):
    """Adjoint of ``columns_batch_last``: scatter-add ``dcols`` [C, kh, kw, OH, OW, N] into the
    padded input (a loop over the kh*kw offsets, pieces of channels on threads), cropped and
    returned as a contiguous NCHW [N, C, H, W]."""
    c, kh, kw, oh, ow, n = dcols.shape
    (h, w), (top, bottom, left, right) = hw, pads
    (sh, sw), (dh, dw) = strides, dilations
    padded = np.empty((c, h + top + bottom, w + left + right, n), dcols.dtype)

    def scatter(start, stop):
        part = padded[start:stop]
        part[...] = 0
        for i in range(kh):
            for j in range(kw):
                part[:, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += \
                    dcols[start:stop, i, j]
    split_range(scatter, c, padded.size)
    inner = padded[:, top:top + h, left:left + w].transpose(3, 0, 1, 2)
    dx = np.empty(inner.shape, dcols.dtype)

    def transpose(start, stop):
        dx[start:stop] = inner[start:stop]
    split_range(transpose, n, dx.size)
    return dx
