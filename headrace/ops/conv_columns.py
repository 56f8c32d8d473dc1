"""The im2col columns of ``conv_gemm.convolve``'s blocks of samples, in one of two layouts.

- **window** (any stride): row (c, i, j) of a sample's columns is the window cell (i, j) of
  channel c at every output position, [OH, OW], copied from a ``sliding_window_view``.  The copy
  runs in pieces of OW contiguous elements (16 on a ResNet block's conv), so NumPy's per-piece
  cost dominates: about 2.3 ms of a 6.7 ms ResNet-block convolution at one thread.
- **flat rows** (stride 1): the padded input is walked on its own row pitch Wp instead of OW.
  Output (oh, ow) and window cell (i, j) read the flat padded image at
  ``(oh + i*dh) * Wp + ow + j*dw``, so row (c, i, j) over the positions p = oh*Wp + ow is the
  contiguous run of L = (OH - 1) * Wp + OW elements starting at ``i*dh*Wp + j*dw``: one copy of
  a long run per row (0.84 ms instead of 2.3 on the ResNet block).  The product then also
  computes Wp - OW junk columns a row (positions ow >= OW, which wrap into the next image row;
  the last row's are zero columns), dropped when the block's outputs are stored, a copy in
  pieces of OW again but of M rows instead of C*kh*kw.  So flat rows pay where the junk is a
  small share of the product (at most ``FLAT_JUNK``) and the columns have at least
  ``FLAT_ROWS_PER_FILTER`` times as many rows as there are filters (measured at one thread: ResNet block, 2 junk columns of 18, 576
  rows, 64 filters: 6.95 -> 6.35 ms; LeNet's second conv, 2 of 13, 288 rows: no gain, its
  product grows 15%; LeNet's first, 9 rows for 32 filters: 1.0 -> 1.8 ms).

Each output element is the same K-long dot product in both layouts (rows in (c, i, j) order);
BLAS may round a product of another width differently, so the layout (fixed by the shapes) can
change the last bits, never the thread count.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

FLAT_JUNK = 0.125   # largest share of junk columns (Wp - OW) / Wp the flat layout accepts
FLAT_ROWS_PER_FILTER = 2   # ... with at least this many column rows (C*kh*kw) per output channel


class WindowColumns:
    """Columns copied from strided windows: a sample's product has OH*OW columns."""

    def __init__(self, win):
        self.win = win                                     # [N, C, kh, kw, OH, OW] view
        _, c, kh, kw, self.oh, self.ow = win.shape
        self.rows, self.width = c * kh * kw, self.oh * self.ow

    def per_sample(self, start, stop):
        """[B, C*kh*kw, width] columns of samples start..stop."""
        cols = np.empty((stop - start,) + self.win.shape[1:], self.win.dtype)
        cols[...] = self.win[start:stop]
        return cols.reshape(stop - start, self.rows, self.width)

    def side_by_side(self, start, stop):
        """[C*kh*kw, B*width] columns of samples start..stop, sample-major along a row."""
        cols = np.empty(self.win.shape[1:4] + (stop - start,) + self.win.shape[4:], self.win.dtype)
        cols[...] = self.win[start:stop].transpose(1, 2, 3, 0, 4, 5)
        return cols.reshape(self.rows, (stop - start) * self.width)

    def outputs(self, product):
        """[..., OH, OW] view of a product's last axis (``width`` columns a sample)."""
        return product.reshape(product.shape[:-1] + (self.oh, self.ow))


class FlatColumns(WindowColumns):
    """Rows as contiguous runs of the flat padded image (module doc): a sample's product has
    OH*Wp columns, the last Wp - OW of each output row junk."""

    def __init__(self, xp, ksize, dilations):
        n, c, hp, self.pitch = xp.shape
        (kh, kw), (dh, dw) = ksize, dilations
        self.oh, self.ow = hp - dh * (kh - 1), self.pitch - dw * (kw - 1)
        self.rows, self.width, self.cells = c * kh * kw, self.oh * self.pitch, (c, kh, kw)
        self.run = (self.oh - 1) * self.pitch + self.ow
        item = xp.itemsize
        self.src = as_strided(xp, shape=(n, c, kh, kw, self.run), writeable=False,
                              strides=(xp.strides[0], hp * self.pitch * item, dh * self.pitch * item, dw * item, item))

    def per_sample(self, start, stop):
        cols = np.empty((stop - start,) + self.cells + (self.width,), self.src.dtype)
        cols[..., self.run:] = 0
        cols[..., :self.run] = self.src[start:stop]
        return cols.reshape(stop - start, self.rows, self.width)

    def side_by_side(self, start, stop):
        cols = np.empty(self.cells + (stop - start, self.width), self.src.dtype)
        cols[..., self.run:] = 0
        cols[..., :self.run] = self.src[start:stop].transpose(1, 2, 3, 0, 4)
        return cols.reshape(self.rows, (stop - start) * self.width)

    def outputs(self, product):
        return product.reshape(product.shape[:-1] + (self.oh, self.pitch))[..., :self.ow]


def columns(xp, win, ksize, strides, dilations, filters):
    """The layout for padded NCHW ``xp``, its window view ``win`` [N, C, kh, kw, OH, OW] and
    ``filters`` output channels (module doc)."""
    _, c, kh, kw, oh, ow = win.shape
    pitch = xp.shape[3]
    if tuple(strides) == (1, 1) and xp.flags.c_contiguous and oh * ow > 0 and pitch - ow <= FLAT_JUNK * pitch \
            and c * kh * kw >= FLAT_ROWS_PER_FILTER * filters:
        return FlatColumns(xp, ksize, dilations)
    return WindowColumns(win)
