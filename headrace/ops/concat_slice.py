"""Ops that cut or join tensors along an axis: concat, split and slice.

Shape rules follow ``shape.py``'s convention (one pure function of shape and attrs, used by both
``infer`` and the kernel; ``BadShape`` for a certain mismatch).  Kernels return views where
possible (split, slice).

Gradients: ``concat_grad`` cuts ``Out@GRAD`` into views by the shapes of ``X`` (shape only); the
gradient of ``split`` is a ``concat`` of the ``Out@GRAD`` pieces (autodiff zero-fills the pieces
nobody used); ``slice_grad`` writes ``Out@GRAD`` into zeros of ``Input``'s shape (``Input`` shape
only).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import DTypeError, ShapeError, fmt_shape
from .gradrule import Gradient, grad_slot
from .registry import REQUIRED, many, register
from .shape import BadShape, axis_index, raise_bad_shape

X_GRAD, OUT_GRAD = grad_slot("X"), grad_slot("Out")


# --- concat --------------------------------------------------------------------------------------
def _concat_infer(ctx):
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    first = shapes[0]
    rank = len(first)
    if rank == 0:
        ctx.fail("X", "inputs of rank >= 1", f"shape {fmt_shape(first)}")
    try:
        axis = axis_index(ctx.attr("axis"), rank, "axis", first)
    except BadShape as bad:
        raise_bad_shape(ctx, bad)
    out = list(first)
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        if dtype != dtypes[0]:
            ctx.fail("X", f"every input of dtype {dtypes[0]}", f"{dtype} at position {i}", error=DTypeError)
        agree = len(shape) == rank and all(
            d == axis or a == b or a == -1 or b == -1 for d, (a, b) in enumerate(zip(out, shape)))
        if not agree:
            ctx.fail("X", f"every input of rank {rank} matching {fmt_shape(first)} except at axis {axis}",
                     f"{fmt_shape(shape)} at position {i}")
        out = [b if a == -1 else a for a, b in zip(out, shape)]
    sizes = [s[axis] for s in shapes]
    out[axis] = -1 if -1 in sizes else sum(sizes)
    ctx.set("Out", out, dtypes[0])




def _concat_grad_kernel(ins, attrs, ctx):
    """X@GRAD[i] = the piece of Out@GRAD where X[i] sits (views); X is read for its shapes only.
    Every position gets its piece, also those autodiff marked as not needed."""
    if X_GRAD not in ctx.wanted:
        return {}
    xs, dout = ins["X"], ins[OUT_GRAD]
    axis = int(attrs["axis"]) % max(dout.ndim, 1)
    sizes = [x.shape[axis] for x in xs]
    if dout.ndim == 0 or sum(sizes) != dout.shape[axis]:
        raise ShapeError(f"op `concat_grad`: input `{OUT_GRAD}` of shape {fmt_shape(dout.shape)} does not "
                         f"match X of shapes {[list(x.shape) for x in xs]} joined along axis {attrs['axis']}")
    return {X_GRAD: np.split(dout, np.cumsum(sizes)[:-1], axis=axis)}


register(
    "concat",
    inputs=[many("X")],
    outputs=["Out"],
    attrs={"axis": 0},
    infer=_concat_infer,
    kernel=lambda ins, attrs, ctx: {"Out": np.concatenate(ins["X"], axis=attrs["axis"])},
    grad=Gradient(_concat_grad_kernel, like={X_GRAD: "X"}, no_need_buffer=["X"], views={X_GRAD: OUT_GRAD}),
    doc="Out = the inputs joined along `axis` (all other dims equal)",
)




# --- split ---------------------------------------------------------------------------------------
def split_sizes(dim, num, sections):
    """Sizes of the pieces of a dim of size ``dim`` (-1: unknown): ``num`` equal pieces, else
    ``sections`` (one entry may be -1: the rest)."""
    if num < 0 or (num == 0 and not sections):
        raise BadShape("num", "num > 0, or a non-empty `sections`", num)
    if num > 0:
        if dim != -1 and dim % num:
            raise BadShape("num", f"a divisor of {dim}, the size of the split axis", num)
        return [dim // num if dim != -1 else -1] * num
    sections = [int(s) for s in sections]
    if sections.count(-1) > 1 or any(s < -1 for s in sections):
        raise BadShape("sections", "sizes >= 0 with at most one -1 (the rest)", sections)
    known = sum(s for s in sections if s != -1)
    if dim == -1:
        return sections
    if -1 in sections:
        if known > dim:
            raise BadShape("sections", f"sizes summing to at most {dim}, the size of the split axis", sections)
        return [dim - known if s == -1 else s for s in sections]
    if known != dim:
        raise BadShape("sections", f"sizes summing to {dim}, the size of the split axis", sections)
    return sections


def _split_infer(ctx):
    x_shape, dtype = ctx.shape("X"), ctx.dtype("X")
    try:
        axis = axis_index(ctx.attr("axis"), len(x_shape), "axis", x_shape)
        sizes = split_sizes(x_shape[axis], ctx.attr("num"), ctx.attr("sections"))
    except BadShape as bad:
        raise_bad_shape(ctx, bad)
    ctx.set_many("Out", [(x_shape[:axis] + (s,) + x_shape[axis + 1:], dtype) for s in sizes])


def _split_kernel(ins, attrs, ctx):
    x, axis = ins["X"], attrs["axis"]
    sizes = split_sizes(x.shape[axis], attrs["num"], attrs["sections"])
    return {"Out": np.split(x, np.cumsum(sizes)[:-1], axis=axis)}


register(
    "split",
    inputs=["X"],
    outputs=[many("Out")],
    views={"Out": "X"},
    attrs={"axis": 0, "num": 0, "sections": []},
    infer=_split_infer,
    kernel=_split_kernel,
    grad=lambda g: [g.grad_op("concat", {"X": g.output_grad("Out")}, {"Out": g.input_grad("X")},
                              {"axis": g.attr("axis")})],
    doc="Out = X cut along `axis` into `num` equal pieces or pieces of sizes `sections` (views); "
        "its gradient is a `concat` of the pieces' gradients",
)


# --- slice ---------------------------------------------------------------------------------------
def slice_bounds(dim, start, end):
    """Python-slice bounds on a known dim: negative indices count from the end, clamped to [0, dim]."""
    start = min(max(start + dim if start < 0 else start, 0), dim)
    end = min(max(end + dim if end < 0 else end, 0), dim)
    return start, max(start, end)


def _slice_len(dim, start, end):
    if dim != -1:
        lo, hi = slice_bounds(dim, start, end)
        return hi - lo
    if (start >= 0) == (end >= 0) and end <= start:
        return 0  # empty whatever the dim is
    return -1


def _slice_plan(shape, axes, starts, ends, decrease_axis):
    """(axes, out shape before decreasing, decreased axes), checking the attrs."""
    if not len(axes) == len(starts) == len(ends):
        raise BadShape("starts", f"as many starts and ends as axes ({len(axes)}); got ends={list(ends)}",
                   list(starts))
    axes = [axis_index(a, len(shape), "axes", shape) for a in axes]
    if len(set(axes)) != len(axes):
        raise BadShape("axes", "distinct axes", axes)
    sliced = list(shape)
    for a, s, e in zip(axes, starts, ends):
        sliced[a] = _slice_len(shape[a], int(s), int(e))
    decrease = sorted({axis_index(a, len(shape), "decrease_axis", shape) for a in decrease_axis})
    for a in decrease:
        if sliced[a] not in (1, -1):
            raise BadShape("decrease_axis", f"axes of length 1 after slicing ({fmt_shape(shape)} sliced to "
                                        f"{fmt_shape(sliced)})", list(decrease_axis))
    return axes, sliced, decrease


def _slice_infer(ctx):
    shape = ctx.shape("Input")
    try:
        _, sliced, decrease = _slice_plan(shape, ctx.attr("axes"), ctx.attr("starts"), ctx.attr("ends"),
                                          ctx.attr("decrease_axis"))
    except BadShape as bad:
        raise_bad_shape(ctx, bad, "Input")
    ctx.set("Out", [d for i, d in enumerate(sliced) if i not in decrease], ctx.dtype("Input"))


def _slice_kernel(ins, attrs, ctx):
    x = ins["Input"]
    axes, _, decrease = _slice_plan(x.shape, attrs["axes"], attrs["starts"], attrs["ends"],
                                    attrs["decrease_axis"])
    index = [slice(None)] * x.ndim
    for a, s, e in zip(axes, attrs["starts"], attrs["ends"]):
        index[a] = slice(*slice_bounds(x.shape[a], int(s), int(e)))
    out = x[tuple(index)] if index else x  # indexing a 0-D array with () would give a scalar
    return {"Out": np.squeeze(out, axis=tuple(decrease)) if decrease else out}




def _slice_grad_kernel(ins, attrs, ctx):
    """Input@GRAD = zeros of Input's shape with Out@GRAD written where the slice came from;
    Input is read for its shape only."""
    in_grad = grad_slot("Input")
    if in_grad not in ctx.wanted:
        return {}
    x, dout = ins["Input"], ins[OUT_GRAD]
    axes, sliced, decrease = _slice_plan(x.shape, attrs["axes"], attrs["starts"], attrs["ends"],
                                         attrs["decrease_axis"])
    out_shape = tuple(d for i, d in enumerate(sliced) if i not in decrease)
    if tuple(dout.shape) != out_shape:
        raise ShapeError(f"op `slice_grad`: input `{OUT_GRAD}` has shape {fmt_shape(dout.shape)}, expected "
                         f"{fmt_shape(out_shape)} (Input of shape {fmt_shape(x.shape)} sliced)")
    dx = np.zeros(x.shape, dtype=x.dtype)
    index = [slice(None)] * dx.ndim
    for a, s, e in zip(axes, attrs["starts"], attrs["ends"]):
        index[a] = slice(*slice_bounds(x.shape[a], int(s), int(e)))
    dx[tuple(index)] = dout.reshape(sliced)
    return {in_grad: dx}


register(
    "slice",
    inputs=["Input"],
    outputs=["Out"],
    views={"Out": "Input"},
    attrs={"axes": REQUIRED, "starts": REQUIRED, "ends": REQUIRED, "decrease_axis": [], "infer_flags": []},
    infer=_slice_infer,
    kernel=_slice_kernel,
    grad=Gradient(_slice_grad_kernel, inputs=("Input",), input_grads=("Input",),
                  like={grad_slot("Input"): "Input"}, no_need_buffer=["Input"]),
    doc="Out = Input[starts[i]:ends[i]] along each axes[i] (Python slice rules, a view); "
        "the dims in decrease_axis (length 1) are removed",
)


