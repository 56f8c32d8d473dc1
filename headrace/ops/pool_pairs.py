"""Max pooling over 2x2 windows at stride 2 of an input they tile exactly (a CNN's usual
downsampling) by pairs, for ``pool2d``'s forward (``ops/pool2d.py``).

Each window is two rows of two cells.  One pass takes the larger of each row's two cells: the
even and the odd columns are stride-2 views that NumPy walks as one long run through the whole
array (the general loop over window offsets walks [N, C, OH, OW] views whose inner runs are OW
cells long, 13 on LeNet's first pool).  A second pass takes the larger of each window's two row
maxima.  ``np.maximum`` is exact, so the bits are the general path's (NaN propagates as there).
LeNet's first pool: 2.2 -> 1.4 ms at 1 thread.  Pieces of samples run on the intra-op threads.

The gradient stays on the general path: the same tournament keeping who won (the right cell
only when strictly larger, then the bottom row only when strictly larger: the first maximum in
row-major order) was measured no faster than comparing each window offset with Out
(6.8 vs 6.4 ms at 1 thread on LeNet's first pool, 3.5 vs 2.6 ms on its second).
"""
from __future__ import annotations

import numpy as np

from .parallel import split_range


def pairs_apply(attrs, ksize, strides, pads, in_hw, out_hw) -> bool:
    """Whether the pooling is a max over 2x2 windows at stride 2 that tile the input exactly."""
    return (attrs["pooling_type"] == "max" and not attrs["adaptive"] and list(ksize) == [2, 2]
            and list(strides) == [2, 2] and not any(pads) and tuple(in_hw) == (2 * out_hw[0], 2 * out_hw[1]))


def max_pool_pairs(x, out_hw):
    """[N, C, OH, OW] maxima of C-contiguous NCHW ``x``'s 2x2 windows (``pairs_apply``).  (On
    odd sizes or views the stride-2 views no longer run through the array: the general loop is as
    fast there.)"""
    n, c = x.shape[:2]
    oh, ow = out_hw
    out = np.empty((n, c, oh, ow), x.dtype)

    def piece(start, stop):
        xs = x[start:stop]
        rows = np.maximum(xs[..., 0::2], xs[..., 1::2]).reshape(stop - start, c, oh, 2, ow)
        np.maximum(rows[:, :, :, 0], rows[:, :, :, 1], out=out[start:stop])
    split_range(piece, n, x.size)
    return out
