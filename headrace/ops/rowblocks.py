"""Blocks of rows for kernels that make several passes over one array (softmax, layer_norm and
their gradients): the pieces they run on the intra-op threads, each block's passes close together
in time (in cache: a modest gain here, where a NumPy pass over 128- to 256-wide rows is bound by
its per-row loop overhead more than by memory; BENCHMARKS.md, sixth session).
``blocks(rows, width)`` cuts the rows into blocks of about ``BLOCK_ELEMENTS`` elements (whole
rows, at least one) from the shape alone, never from the thread count; ``for_blocks`` runs
``fn(index, start, stop)`` for every block, on the intra-op threads (``parallel.run_pieces``)
when the array is worth splitting; a row-wise kernel (``rowwise=True``) that is not split runs
as one block.

Bits: a row-wise computation is the same arithmetic on a row whichever block holds it.  A sum
across rows (a column sum, a per-channel sum) is computed per block into ``partial[index]`` and
the partials are then added in block order (``combine``), so it depends on the blocks, which
depend on the shape only: the same bits for any thread count and in every execution mode.
"""
from __future__ import annotations

import numpy as np

from . import parallel

BLOCK_ELEMENTS = 1 << 16   # 256 KiB of float32 per operand: a kernel's few operands stay in L2
EINSUM_WIDTH = 512         # rows up to this wide are summed by einsum (``row_sums``)


def row_sums(a, out=None):
    """The sum of each row of the 2-D ``a``: by ``einsum`` for rows up to ``EINSUM_WIDTH`` (one
    pass without NumPy's per-row reduction overhead, at most a few dozen terms a SIMD lane), by
    ``np.add.reduce``'s pairwise summation for wider ones (einsum adds sequentially, ~10x less
    accurate on 150K-wide softmax rows, and above 8192 its bits depend on how many rows a call
    gets: review findings).  Either way a row's bits depend on that row only."""
    if a.shape[1] <= EINSUM_WIDTH:
        return np.einsum("ij->i", a, out=out)
    return np.add.reduce(a, axis=1, out=out)


def row_dots(a, b, out=None):
    """The dot product of each row of ``a`` with the same row of ``b`` (as ``row_sums``; wide rows
    take their products ~``BLOCK_ELEMENTS`` at a time, so the scratch never grows with the array:
    a review found a full-size temporary in a one-block layer_norm)."""
    if a.shape[1] <= EINSUM_WIDTH:
        return np.einsum("ij,ij->i", a, b, out=out)
    if out is None:
        out = np.empty(a.shape[0], np.result_type(a, b))
    step = max(1, BLOCK_ELEMENTS // a.shape[1])
    for start in range(0, a.shape[0], step):
        rows = slice(start, start + step)
        np.add.reduce(a[rows] * b[rows], axis=1, out=out[rows])
    return out


def _step(rows: int, width: int, max_blocks, align: int = 1) -> int:
    step = max(1, BLOCK_ELEMENTS // max(width, 1))
    if align > 1:
        step = max(align, step // align * align)
    return step if max_blocks is None else max(step, -(-rows // max_blocks))


def blocks(rows: int, width: int, max_blocks: int | None = None, align: int = 1) -> list:
    """(start, stop) row ranges of about ``BLOCK_ELEMENTS`` elements (whole rows), covering
    ``rows``; at most ``max_blocks`` of them (larger blocks then), which bounds the memory of
    per-block partial results of wide rows; ``align``: blocks of a multiple of that many rows
    (whole samples of group_norm's (sample, group) rows)."""
    step = _step(rows, width, max_blocks, align)
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def for_blocks(fn, rows: int, width: int, max_blocks: int | None = None, rowwise: bool = False,
               align: int = 1) -> int:
    """``fn(index, start, stop)`` for every block of ``blocks(rows, width, max_blocks, align)`` (on
    threads when the array is large enough); returns the number of blocks.  ``rowwise``: ``fn``
    computes each row from that row only (no per-block partials), so when the array is not split
    over threads it runs as one block (``fn(0, 0, rows)``: no per-block call overhead)."""
    if rowwise and not parallel.worth(rows * width):
        if rows:
            fn(0, 0, rows)
        return 1
    spans = [(index, start, stop) for index, (start, stop) in enumerate(blocks(rows, width, max_blocks, align))]
    if len(spans) > 1 and parallel.worth(rows * width):
        parallel.run_pieces(fn, spans)
    else:
        for span in spans:
            fn(*span)
    return len(spans)


def block_count(rows: int, width: int, max_blocks: int | None = None, align: int = 1) -> int:
    """How many blocks ``for_blocks`` runs with these arguments (to size per-block partials)."""
    return len(range(0, rows, _step(rows, width, max_blocks, align)))


def combine(partial: np.ndarray) -> np.ndarray:
    """The sum of per-block partial results ``partial[index]``, added in block order (zeros for
    no blocks: an empty batch)."""
    if len(partial) == 0:
        return np.zeros(partial.shape[1:], partial.dtype)
    total = partial[0].copy()
    for part in partial[1:]:
        total += part
    return total
