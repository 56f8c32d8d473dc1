"""Convolution as matrix products (the arithmetic behind ``ops/conv.py``'s kernels).

im2col copies the input's windows, taken as strided views (``sliding_window_view``), into a
column matrix once; every convolution product is then one (batched) matmul.  Two layouts, each
where it is fastest:

- **per sample** (forward, ``convolve``): columns [B, g, C/g*kh*kw, OH*OW] of a block of B
  samples at a time, in a buffer of about ``BLOCK_BYTES`` that stays in cache, then
  ``Filter_g @ columns`` into the block's rows of the result [N, g, M/g, OH*OW], which already
  is NCHW (no output transpose).  Blocks run on the intra-op threads with BLAS at one thread;
  each sample's product is the same BLAS call as one batched matmul over all columns would make,
  so the bits do not depend on the block size or the thread count (except for a batch with fewer
  blocks than threads, e.g. of one sample: its product is split as ``gemm.matmul`` splits, which
  may change the last bits between thread counts).  (Building all N samples'
  columns first wrote them to memory and read them back: ~15% slower on a ResNet block's conv.)
  A sample with few output positions (fewer than ``PRODUCT_COLUMNS``) gets its columns side by
  side with the next samples' ([g, C/g*kh*kw, B*OH*OW], up to ``PRODUCT_BYTES``): one wider
  product a block, copied into NCHW in cache (LeNet's second conv, 121 positions: 7.5 -> 6.9 ms
  at 1 thread).  The blocks then depend on the shapes only, so the bits do not depend on the
  thread count, a batch of one included.
- **input gradient as a convolution** (``input_grad_as_conv``): for stride 1, Input@GRAD is
  Output@GRAD padded by ``dilation * (k - 1) - pad`` and correlated with the filters flipped in
  both spatial axes and transposed (input and output channels swapped, per group), i.e. the
  forward above.  Used when it does no more multiply-adds than col2im's product (H*W <= OH*OW,
  e.g. "same" convolutions): no [C*kh*kw, OH*OW*N] product and no scatter-add (a ResNet block's
  3x3 conv: 9.8 -> 6.6 ms CPU; a depthwise 3x3 conv of [32, 64, 32, 32], one filter a group,
  21.8 -> 5.6 ms at 2 threads).  Strided convolutions and "valid" ones (H*W > OH*OW) keep col2im.
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

from . import gemm, parallel
from .parallel import split_range

BLOCK_BYTES = 1 << 18   # columns per block of samples in the forward (measured: 256-512 KiB best)
PRODUCT_COLUMNS = 1024   # the forward's products have at least about this many columns (``_samples_per_product``)
PRODUCT_BYTES = 1 << 20   # ... while their columns stay within this many bytes
COPY_BLOCK_BYTES = 1 << 15   # source bytes per block of col2im's final transpose (measured: 16-40 KiB)


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
    win = _window_view(_padded_input(x, pads), 2, ksize, strides, dilations).transpose(0, 1, 4, 5, 2, 3)
    _, _, kh, kw, oh, ow = win.shape
    return _copied(win).reshape(n, groups, c // groups * kh * kw, oh * ow), (oh, ow)


def _copied(win):
    """A contiguous copy of the view ``win``, pieces of its first axis on threads (element-wise:
    the same bits for any thread count)."""
    cols = np.empty(win.shape, win.dtype)

    def piece(start, stop):
        cols[start:stop] = win[start:stop]
    split_range(piece, win.shape[0], cols.size)
    return cols


def convolve(x, w, strides, pads, dilations, groups, bias=None):
    """[N, M, OH, OW]: the cross-correlation of NCHW ``x`` with ``w`` [M, C/g, kh, kw], by blocks
    of samples (module doc).  With fewer blocks than threads (a batch of one), all columns are
    built first and each product is split over the threads instead (``gemm.matmul``).  ``bias``
    ([M] or None) is added to each block while it is in cache: the sum elementwise_add(axis=1)
    of the result and ``bias`` would give, bit for bit."""
    n, c = x.shape[:2]
    m, cg, kh, kw = w.shape
    xp = _padded_input(x, pads)
    win = _window_view(xp, 2, (kh, kw), strides, dilations).transpose(0, 1, 4, 5, 2, 3)  # [N, C, kh, kw, OH, OW]
    oh, ow = win.shape[-2:]
    filters = w.reshape(groups, m // groups, cg * kh * kw)
    sample_bytes = max(1, c * kh * kw * oh * ow * x.itemsize)
    side_by_side = _samples_per_product(oh * ow, sample_bytes)
    size = side_by_side if side_by_side > 1 else max(1, BLOCK_BYTES // sample_bytes)
    blocks = [(start, min(start + size, n)) for start in range(0, n, size)]
    per_channel = None if bias is None else bias.reshape(groups, m // groups, 1)
    if side_by_side == 1 and parallel.num_threads() > max(1, len(blocks)):
        cols = _copied(win).reshape(n, groups, cg * kh * kw, oh * ow)
        out = gemm.matmul(filters, cols)
        if per_channel is not None:
            out += per_channel
        return out.reshape(n, m, oh, ow)
    out = np.empty((n, groups, m // groups, oh * ow), np.result_type(x, w))

    def block(start, stop):
        cols = np.empty((stop - start,) + win.shape[1:], x.dtype)
        cols[...] = win[start:stop]
        np.matmul(filters, cols.reshape(stop - start, groups, cg * kh * kw, oh * ow), out=out[start:stop])

    def block_side_by_side(start, stop):   # columns [g, C/g*kh*kw, B*OH*OW]: one wider product
        cols = np.empty(win.shape[1:4] + (stop - start,) + win.shape[4:], x.dtype)
        cols[...] = win[start:stop].transpose(1, 2, 3, 0, 4, 5)
        product = np.matmul(filters, cols.reshape(groups, cg * kh * kw, (stop - start) * oh * ow))
        out[start:stop] = product.reshape(groups, m // groups, stop - start, oh * ow).transpose(2, 0, 1, 3)
    fill = block if side_by_side == 1 else block_side_by_side

    def work(start, stop):
        fill(start, stop)
        if per_channel is not None:   # while the block is in cache
            out[start:stop] += per_channel
    with gemm.blas_on_one_thread():
        if len(blocks) > 1 and parallel.num_threads() > 1:
            parallel.run_pieces(work, blocks)
        else:
            for start, stop in blocks:
                work(start, stop)
    return out.reshape(n, m, oh, ow)


def _samples_per_product(positions, sample_bytes):
    """How many samples' columns ``convolve`` puts side by side in one product: enough for about
    ``PRODUCT_COLUMNS`` columns when one sample has fewer output positions (a product of a few
    hundred columns runs well below the BLAS rate: 5.1 -> 4.3 ms at 1 thread on LeNet's second
    conv, 121 positions), while the columns stay within ``PRODUCT_BYTES`` (in cache; wider blocks
    were slower on a ResNet block's conv)."""
    return max(1, min(PRODUCT_COLUMNS // max(positions, 1), PRODUCT_BYTES // sample_bytes))


def input_grad_as_conv(dout, w, in_hw, strides, pads, dilations, groups):
    """Input@GRAD [N, C, H, W] of a stride-1 convolution as ``convolve`` of NCHW ``dout`` with the
    flipped, channel-swapped filters (module doc), or None where col2im is the better way."""
    n, m, oh, ow = dout.shape
    _, cg, kh, kw = w.shape
    reach = (dilations[0] * (kh - 1), dilations[0] * (kh - 1), dilations[1] * (kw - 1), dilations[1] * (kw - 1))
    flipped_pads = tuple(r - p for r, p in zip(reach, pads))
    if tuple(strides) != (1, 1) or min(flipped_pads) < 0 or in_hw[0] * in_hw[1] > oh * ow:
        return None
    flipped = w.reshape(groups, m // groups, cg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
    flipped = np.ascontiguousarray(flipped).reshape(groups * cg, m // groups, kh, kw)
    return convolve(dout, flipped, (1, 1), flipped_pads, dilations, groups)


def depthwise_filter_grad(x, dout, ksize, strides, pads, dilations, groups):
    """Filter@GRAD [M, 1, kh, kw] of a convolution with one input channel a group (depthwise,
    M = groups * multiplier): for each sample and window offset, the sum over positions of
    Output@GRAD times the input's window view (``einsum``, in cache: a sample's input and
    gradient are a few hundred KB), per-sample results added in sample order.  The im2col route
    copied every window (9x the input for 3x3) and made one tiny product per channel: a [32, 64,
    32, 32] 3x3 depthwise conv 21.3 -> 6.9 ms at one thread.  (Not for many filters a group: the
    einsum over them is slow, LeNet's first conv, one group of 32 filters, 1.2 -> 11 ms.)
    Samples run on the intra-op threads (each sample's sums alone: the same bits for any thread
    count)."""
    n, m, oh, ow = dout.shape
    (kh, kw), (sh, sw), (dh, dw) = ksize, strides, dilations
    xp = _padded_input(x, pads)
    ds = dout.reshape(n, groups, m // groups, oh, ow)
    partial = np.empty((n, groups, m // groups, kh, kw), np.result_type(x, dout))

    def piece(start, stop):
        for sample in range(start, stop):
            for i in range(kh):
                for j in range(kw):
                    win = xp[sample, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                    np.einsum("gmhw,ghw->gm", ds[sample], win, out=partial[sample, :, :, i, j])
    split_range(piece, n, dout.size * kh * kw)
    return np.add.reduce(partial, axis=0).reshape(m, 1, kh, kw)


def _padded_input(x, pads):
    """NCHW ``x`` padded with zeros (``x`` itself without pads); pieces of samples on threads."""
    if not any(pads):
        return x
    xp, inner = _padded(x.shape, 2, pads, x.dtype)
    split_range(lambda s, e: _fill_padded(xp, inner, x, s, e), x.shape[0], xp.size)
    return xp


def columns_batch_last(x, ksize, strides, pads, dilations, groups):
    """[g, C/g*kh*kw, OH*OW*N] columns of NCHW ``x`` (a transpose copy, then one copy)."""
    xt = x.transpose(1, 2, 3, 0)                                              # [C, H, W, N] view
    xp, inner = _padded(xt.shape, 1, pads, x.dtype)
    split_range(lambda s, e: _fill_padded(xp, inner, xt, s, e), xt.shape[0], xp.size)
    win = _window_view(xp, 1, ksize, strides, dilations).transpose(0, 4, 5, 1, 2, 3)  # [C, kh, kw, OH, OW, N]
    cols = _copied(win)
    c, kh, kw = cols.shape[:3]
    return cols.reshape(groups, c // groups * kh * kw, -1)


def batch_last(y):
    """NCHW ``y`` [N, M, OH, OW] as a contiguous [M, OH*OW*N] (the gradients' layout)."""
    n, m, oh, ow = y.shape
    return _copied(y.transpose(1, 2, 3, 0)).reshape(m, oh * ow * n)


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
    rows = max(1, COPY_BLOCK_BYTES // max(1, w * n * dcols.itemsize))

    def transpose(start, stop):
        # channel by channel, a block of rows at a time: each block's strided reads stay in cache
        # (one copy of the whole transposed view walked all of it for every output row: 3.1 ->
        # 0.6 ms on LeNet's second conv, 1.5 -> 0.4 ms on the ResNet block's)
        for ch in range(start, stop):
            for row in range(0, h, rows):
                dx[:, ch, row:row + rows] = inner[:, ch, row:row + rows]
    split_range(transpose, c, dx.size)
    return dx
