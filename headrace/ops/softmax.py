"""``softmax`` and its gradient (moved here from activation.py; the op record is unchanged).

Along the last axis (attention, classifiers) the kernels run on C-contiguous rows in row blocks
(``rowblocks``; the forward as one block when not split over threads), each row's bits depending
on that row only:

- forward: ``exp(x) / sum(exp(x))`` when that row's sum is in ``[1, inf)``: no shift is needed,
  and the pass computing ``x - max`` is saved.  Otherwise (a row whose exp overflows, whose sum
  is below 1, or which holds a NaN) that row is computed as ``exp(x - max) / sum(exp(x - max))``.
  Both are softmax; they differ in rounding only.  With a sum of at least 1 an exp term is
  subnormal only where the result is below the smallest normal number, where the shifted form's
  result is subnormal too: the absolute error there is a subnormal's rounding in both.
- gradient: ``dX = (dOut - sum(dOut * Out)) * Out`` with the row dot products in one pass
  (``rowblocks.row_dots``).

Other axes keep the strided form: ``exp(x - max) / sum`` over the axis, rows split over threads.
Buffers: both kernels compute into a handed ``out`` buffer (``X``'s own for the forward,
``Out@GRAD``'s for the gradient), reading what they need from it first.
"""
from __future__ import annotations

import numpy as np

from .activation import DOUT, DX, FLOATS
from .gradrule import Gradient
from .infer_helpers import normalize_axes
from .parallel import chunked
from .registry import register
from .rowblocks import for_blocks, row_dots, row_sums


def _softmax_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    shape = ctx.shape("X")
    try:
        normalize_axes([ctx.attr("axis")], len(shape), "axis")
    except ValueError:
        ctx.fail_attr("axis", f"an axis in [-{max(len(shape), 1)}, {max(len(shape), 1)}) "
                              f"for X of rank {len(shape)}", ctx.attr("axis"))
    ctx.set("Out", shape, dtype)


def softmax(x: np.ndarray, axis: int, buf=None) -> np.ndarray:
    """Softmax of ``x`` along ``axis`` into ``buf`` (a C-contiguous array of x's shape and dtype,
    maybe ``x`` itself) or a fresh array; a 0-D input gives 1."""
    if x.ndim == 0:
        return np.ones_like(x)
    out = np.empty(x.shape, x.dtype) if buf is None else buf
    if out.size == 0:
        return out
    axis = axis % x.ndim - x.ndim   # counted from the end: pieces merge the leading axes
    if axis != -1:
        return _softmax_strided(x, axis, out)
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out_rows = out.reshape(rows.shape)
    shared = np.may_share_memory(rows, out_rows)

    def block(index, start, stop):
        _softmax_rows(rows[start:stop], out_rows[start:stop], shared)
    for_blocks(block, *rows.shape, rowwise=not shared)   # in place: block by block, each block's
    return out                                            # exp in a block-sized scratch array


def _softmax_rows(x, out, shared):
    """Softmax of each row of ``x`` into ``out`` (``shared``: out is x's memory; see the module
    docstring for which rows are shifted by their max)."""
    e = np.empty_like(x) if shared else out
    with np.errstate(over="ignore", under="ignore"):   # an overflowing row is redone below
        np.exp(x, out=e)
        total = row_sums(e)
    redo = np.flatnonzero(~((total >= 1) & (total < np.inf)))   # NaN fails both
    if redo.size:
        shifted = x[redo] - np.max(x[redo], axis=1, keepdims=True)
        np.exp(shifted, out=shifted)
        e[redo] = shifted / row_sums(shifted)[:, None]
        total[redo] = 1
    np.divide(e, total[:, None], out=out)


def _softmax_strided(x, axis, out):
    """exp(x - max) / sum(exp(x - max)) along ``axis`` (not the last one), in place in ``out``;
    rows split over threads, never the axes reduced."""
    def rows(x, out):
        np.subtract(x, np.max(x, axis=axis, keepdims=True), out=out)
        np.exp(out, out=out)
        np.divide(out, np.sum(out, axis=axis, keepdims=True), out=out)
    return chunked(rows, out, x, keep=-axis)


def _softmax_grad_kernel(ins, attrs, ctx):
    """dX = (dOut - sum(dOut * Out, axis)) * Out, into the handed buffer (maybe dOut's) or a
    fresh array."""
    if DX not in ctx.wanted:
        return {}
    o, dout = ins["Out"], ins[DOUT]
    if o.ndim == 0:  # softmax of a scalar is the constant 1
        return {DX: np.zeros_like(dout)}
    dx = ctx.buffer(DX, dout.shape, dout.dtype)
    dx = np.empty(o.shape, o.dtype) if dx is None else dx
    if dx.size == 0:
        return {DX: dx}
    axis = attrs["axis"] % o.ndim - o.ndim   # counted from the end: pieces merge the leading axes
    if axis == -1:
        o2 = np.ascontiguousarray(o).reshape(-1, o.shape[-1])
        dout2, dx2 = np.ascontiguousarray(dout).reshape(o2.shape), dx.reshape(o2.shape)

        def block(index, start, stop):
            _softmax_grad_rows(o2[start:stop], dout2[start:stop], dx2[start:stop])
        for_blocks(block, *o2.shape)   # blocks even on one thread: the second read of Out and dOut hits
        return {DX: dx}                 # the cache (1.00 vs 1.16 ms for 1M float32 in one block)

    def rows(o, dout, dx):
        dot = np.multiply(dout, o).sum(axis=axis, keepdims=True)
        np.subtract(dout, dot, out=dx)
        dx *= o
    return {DX: chunked(rows, dx, np.ascontiguousarray(o), np.ascontiguousarray(dout), keep=-axis)}


def _softmax_grad_rows(o, dout, dx):
    """(dOut - rowdot(dOut, Out)) * Out for a block of rows; ``dx`` may be dOut's memory."""
    dot = row_dots(dout, o)
    np.subtract(dout, dot[:, None], out=dx)
    dx *= o


def log_softmax_last(x):
    """log_softmax of C-contiguous rows along the last axis, in row blocks (``rowblocks``):
    (x - max) - log(sum(exp(x - max))), each block's exp in a block-sized scratch array."""
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, x.dtype)

    def block(index, start, stop):
        o = out[start:stop]
        np.subtract(rows[start:stop], np.max(rows[start:stop], axis=1, keepdims=True), out=o)
        e = np.exp(o)
        o -= np.log(row_sums(e))[:, None]
    if out.size:
        for_blocks(block, *rows.shape, rowwise=True)
    return out.reshape(x.shape)


def log_softmax_grad_last(out, dout):
    """dOut - exp(Out) * sum(dOut) along the last axis, in row blocks."""
    o2 = np.ascontiguousarray(out).reshape(-1, out.shape[-1])
    d2 = np.ascontiguousarray(dout).reshape(o2.shape)
    dx = np.empty(o2.shape, dout.dtype)

    def block(index, start, stop):
        e = np.exp(o2[start:stop])
        e *= row_sums(d2[start:stop])[:, None]
        np.subtract(d2[start:stop], e, out=dx[start:stop])
    if dx.size:
        for_blocks(block, *o2.shape, rowwise=True)
    return dx.reshape(dout.shape)


register(
    "softmax",
    inputs=["X"],
    outputs=["Out"],
    attrs={"axis": -1},
    infer=_softmax_infer,
    kernel=lambda ins, attrs, ctx: {"Out": softmax(ins["X"], attrs["axis"], ctx.buffer_like("Out", ins["X"]))},
    grad=Gradient(_softmax_grad_kernel, inputs=(), outputs=("Out",), like={DX: "Out"}, inplace={DX: DOUT},
                  buffers=True),
    buffers=True,
    inplace={"Out": "X"},
    doc="Out = exp(X) / sum(exp(X)) along `axis`; rows where that could overflow or lose precision as "
        "exp(X - max) / sum(exp(X - max))",
)
