"""Max pooling that also returns where each maximum came from, and its inverse:
``max_pool2d_with_index`` and ``unpool``.

``max_pool2d_with_index``: X [N, C, H, W] -> Out (the window maxima) and Mask (int32, the index
``h * W + w`` of each maximum in its input plane; the first maximum of a window in row-major order
on ties).  Windows as ``pool2d``: explicit ``paddings`` [pad_h, pad_w] or [top, bottom, left,
right] clipped to the input, ``ceil_mode``, or ``adaptive`` bins [floor(i H / O), ceil((i+1) H / O))
with ``ksize`` the output size.  Its gradient sends each output gradient to its Mask position
(overlapping windows add up).

``unpool`` / ``unpool3d`` (max unpooling): X [N, C, h, w] (or [N, C, d, h, w]) and Indices (a
Mask as above) -> Out [N, C, *output_size]
with every value of X written at its index and zeros elsewhere (the reference's op); its gradient
gathers Out@GRAD at the indices.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import int32, int64
from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import REQUIRED, register

DX, DOUT = grad_slot("X"), grad_slot("Out")


def _pads(paddings):
    p = [int(v) for v in paddings]
    return (p[0], p[0], p[1], p[1]) if len(p) == 2 else tuple(p)


def _axis_windows(size, attrs, axis):
    """(start [O], end [O]) of the windows along one axis (clipped to [0, size))."""
    k, s = int(attrs["ksize"][axis]), int(attrs["strides"][axis])
    if attrs["adaptive"]:
        i = np.arange(k)
        return (i * size) // k, -((-(i + 1) * size) // k)
    before, after = _pads(attrs["paddings"])[2 * axis: 2 * axis + 2]
    extra = s - 1 if attrs["ceil_mode"] else 0
    out = (size + before + after - k + extra) // s + 1
    start = np.arange(out) * s - before
    return np.maximum(start, 0), np.minimum(start + k, size)


def _out_size(size, attrs, axis):
    if size < 0:
        return -1
    return len(_axis_windows(size, attrs, axis)[0])


def _with_index_infer(ctx):
    shape = ctx.check_rank("X", 4)
    dtype = check_float(ctx, "X")
    for name, minimum in (("ksize", 1), ("strides", 1)):
        value = ctx.attr(name)
        if len(value) != 2 or any(int(v) < minimum for v in value):
            ctx.fail_attr(name, f"2 integers >= {minimum}", value)
    if len(ctx.attr("paddings")) not in (2, 4) or any(int(p) < 0 for p in ctx.attr("paddings")):
        ctx.fail_attr("paddings", "2 or 4 integers >= 0", ctx.attr("paddings"))
    out = tuple(_out_size(shape[2 + a], ctx.attrs, a) for a in range(2))
    if any(d == 0 for d in out):
        ctx.fail("X", "an input large enough for the window", f"shape {fmt_shape(shape)}")
    ctx.set("Out", (shape[0], shape[1]) + out, dtype)
    ctx.set("Mask", (shape[0], shape[1]) + out, int32)


def _gather_index(size, start, end):
    """[O, kmax] cell indices (clipped) and their validity."""
    kmax = max(int((end - start).max(initial=1)), 1)
    index = start[:, None] + np.arange(kmax)
    valid = index < end[:, None]
    return np.where(valid, index, 0), valid


def _with_index_kernel(ins, attrs, ctx):
    x = ins["X"]
    n, c, h, w = x.shape
    ih, vh = _gather_index(h, *_axis_windows(h, attrs, 0))
    iw, vw = _gather_index(w, *_axis_windows(w, attrs, 1))
    cells = x[:, :, ih[:, None, :, None], iw[None, :, None, :]]          # [N, C, OH, OW, kh, kw]
    valid = vh[:, None, :, None] & vw[None, :, None, :]
    oh, ow, kh, kw = valid.shape
    flat = np.where(valid, cells, np.array(-np.inf, x.dtype)).reshape(n, c, oh, ow, kh * kw)
    best = flat.argmax(axis=-1)                                           # first maximum, row-major
    rows = ih[np.arange(oh)[None, None, :, None], best // kw]
    cols = iw[np.arange(ow)[None, None, None, :], best % kw]
    out = np.take_along_axis(flat, best[..., None], -1)[..., 0]
    return {"Out": np.ascontiguousarray(out, dtype=x.dtype), "Mask": (rows * w + cols).astype(np.int32)}


def _scatter(values, index, plane, n_c):
    """Sum ``values`` [N, C, ...] into [N, C, plane] at ``index`` (per channel)."""
    offsets = (np.arange(n_c) * plane).reshape(values.shape[:2] + (1,) * (values.ndim - 2))
    total = np.bincount((index + offsets).ravel(), weights=values.ravel().astype(np.float64),
                        minlength=n_c * plane)
    return total.reshape(values.shape[:2] + (plane,))


def _with_index_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, mask, dout = ins["X"], ins["Mask"], ins[DOUT]
    n, c, h, w = x.shape
    dx = _scatter(dout, mask.astype(np.int64), h * w, n * c)
    return {DX: dx.reshape(x.shape).astype(dout.dtype)}


register("max_pool2d_with_index", inputs=["X"], outputs=["Out", "Mask"],
         attrs={"ksize": REQUIRED, "strides": [1, 1], "paddings": [0, 0], "global_pooling": False,
                "adaptive": False, "ceil_mode": False},
         infer=_with_index_infer, kernel=_with_index_kernel,
         grad=Gradient(_with_index_grad_kernel, inputs=("X",), outputs=("Mask",), no_need_buffer=("X",)),
         doc="Out = window maxima of X, Mask = the flat (h * W + w) input index of each maximum")


# --- unpool ----------------------------------------------------------------------------------------
def _make_unpool_infer(rank):
    def infer(ctx):
        shape = ctx.check_rank("X", rank)
        dtype = check_float(ctx, "X")
        ctx.check_dtype("Indices", (int32, int64))
        if list(ctx.shape("Indices")) != list(shape) and -1 not in list(shape) + list(ctx.shape("Indices")):
            ctx.fail("Indices", f"the shape of X {fmt_shape(shape)}", f"shape {fmt_shape(ctx.shape('Indices'))}")
        size = ctx.attr("output_size")
        if len(size) != rank - 2 or any(int(s) <= 0 for s in size):
            ctx.fail_attr("output_size", f"{rank - 2} positive integers", size)
        ctx.set("Out", (shape[0], shape[1]) + tuple(int(s) for s in size), dtype)
    return infer


def _unpool_kernel(ins, attrs, ctx):
    x, index = ins["X"], ins["Indices"].astype(np.int64)
    n, c = x.shape[:2]
    plane = int(np.prod([int(s) for s in attrs["output_size"]]))
    if index.size and (index.min() < 0 or index.max() >= plane):
        raise IndexError(f"unpool: an index is outside the output plane of {plane} values "
                         f"(got {index.min()}..{index.max()})")
    out = np.zeros((n, c, plane), x.dtype)
    np.put_along_axis(out, index.reshape(n, c, -1), x.reshape(n, c, -1), axis=2)
    return {"Out": out.reshape((n, c) + tuple(int(s) for s in attrs["output_size"]))}


def _unpool_grad_infer(ctx):
    ctx.set(DX, ctx.shape("Indices"), ctx.dtype(DOUT))


def _unpool_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    index, dout = ins["Indices"].astype(np.int64), ins[DOUT]
    n, c = dout.shape[:2]
    picked = np.take_along_axis(dout.reshape(n, c, -1), index.reshape(n, c, -1), axis=2)
    return {DX: picked.reshape(index.shape)}


for _type, _rank in (("unpool", 4), ("unpool3d", 5)):
    register(_type, inputs=["X", "Indices"], outputs=["Out"],
             attrs={"unpooling_type": "max", "ksize": [], "strides": [], "paddings": [], "output_size": REQUIRED,
                    "data_format": "NCHW" if _rank == 4 else "NCDHW"},
             infer=_make_unpool_infer(_rank), kernel=_unpool_kernel,
             grad=Gradient(_unpool_grad_kernel, inputs=("Indices",), infer=_unpool_grad_infer),
             doc="Out = zeros of output_size with X written at the flat positions Indices (max unpooling)")
