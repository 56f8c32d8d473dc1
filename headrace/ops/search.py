"""Searching and sorting: ``arg_max``/``arg_min``, ``argsort`` (values and indices), ``top_k_v2``,
``where``, ``where_index`` (nonzero), ``masked_select`` and ``unique``.

Indices are int64 (``arg_max``/``arg_min`` may ask for int32).  Sorting is always stable: equal
elements keep their order (descending too), which is what the reference's ``stable=True`` gives
and one valid order for ``stable=False``.  ``arg_max``/``arg_min`` give the first extreme.  NaN
sorts last ascending (first descending), as NumPy orders it.

Gradients: ``argsort``'s and ``top_k_v2``'s ``Out`` send ``Out@GRAD`` back to the positions the
indices name (``X`` shape only); ``where`` sends ``Out@GRAD`` to X where Condition holds and to
Y elsewhere (summed over broadcast dims); ``masked_select`` writes ``Y@GRAD`` into zeros at the
mask's True positions.  The index outputs, ``arg_*``, ``where_index`` and ``unique`` have none.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_, convert_dtype, int64
from ..core.errors import DTypeError, fmt_shape
from .elementwise import unbroadcast
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .infer_helpers import BroadcastError, broadcast_shape
from .registry import REQUIRED, register
from .shape import BadShape, axis_index, raise_bad_shape

DX, DY, DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")


def _axis(ctx, shape, name="axis"):
    try:
        return axis_index(ctx.attr(name), max(len(shape), 1), name, shape)
    except BadShape as bad:
        raise_bad_shape(ctx, bad)


# --- arg_max / arg_min -----------------------------------------------------------------------------
def _arg_infer(ctx):
    shape = ctx.shape("X")
    if ctx.attr("flatten") or not shape:
        out = [1] * len(shape) if ctx.attr("keepdims") else []
    else:
        axis = _axis(ctx, shape)
        out = [1 if i == axis else d for i, d in enumerate(shape)] if ctx.attr("keepdims") else \
            [d for i, d in enumerate(shape) if i != axis]
    dtype = convert_dtype(ctx.attr("dtype"))
    if dtype not in ("int32", "int64"):
        ctx.fail_attr("dtype", "int32 or int64", ctx.attr("dtype"))
    if any(d == 0 for d in shape):
        ctx.fail("X", "a non-empty tensor", f"shape {fmt_shape(shape)}")
    ctx.set("Out", out, dtype)


def _arg_kernel(fn):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        dtype = convert_dtype(attrs["dtype"]).numpy
        if attrs["flatten"] or x.ndim == 0:
            out = np.asarray(fn(x.reshape(-1)))
            if attrs["keepdims"]:
                out = out.reshape([1] * x.ndim)
        else:
            out = fn(x, axis=attrs["axis"], keepdims=attrs["keepdims"])
        return {"Out": np.asarray(out, dtype=dtype)}
    return kernel


for _type, _fn in (("arg_max", np.argmax), ("arg_min", np.argmin)):
    register(_type, inputs=["X"], outputs=["Out"],
             attrs={"axis": 0, "keepdims": False, "flatten": False, "dtype": "int64"},
             infer=_arg_infer, kernel=_arg_kernel(_fn), grad=NO_GRADIENT,
             doc=f"Out = the index of the first {'maximum' if _fn is np.argmax else 'minimum'} along `axis` "
                 "(of the flattened X when `flatten`)")


# --- argsort / top_k_v2 ----------------------------------------------------------------------------
def stable_argsort(x, axis, descending):
    """Stable ascending or descending argsort along ``axis`` (equal elements keep their order)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(flipped, axis)


def _argsort_infer(ctx):
    shape = ctx.shape("X")
    _axis(ctx, shape)
    ctx.set("Out", shape, ctx.dtype("X"))
    ctx.set("Indices", shape, int64)


def _argsort_kernel(ins, attrs, ctx):
    x = ins["X"]
    if x.ndim == 0:
        return {"Out": x.copy(), "Indices": np.zeros((), np.int64)}
    idx = stable_argsort(x, attrs["axis"], attrs["descending"]).astype(np.int64)
    return {"Out": np.take_along_axis(x, idx, attrs["axis"]), "Indices": idx}


def _scatter_back_kernel(op_type):
    """X@GRAD = zeros of X's shape with Out@GRAD put at Indices along `axis` (X shape only)."""
    def kernel(ins, attrs, ctx):
        if DX not in ctx.wanted:
            return {}
        x, idx, dout = ins["X"], ins["Indices"], ins[DOUT]
        if dout.shape != idx.shape:
            raise ValueError(f"op `{op_type}`: `{DOUT}` has shape {fmt_shape(dout.shape)}, Indices "
                             f"{fmt_shape(idx.shape)}")
        dx = np.zeros(x.shape, dtype=x.dtype)
        if x.ndim == 0:
            return {DX: np.asarray(dout, dtype=x.dtype).copy()}
        np.put_along_axis(dx, idx, dout, attrs["axis"])
        return {DX: dx}
    return kernel


register("argsort", inputs=["X"], outputs=["Out", "Indices"],
         attrs={"axis": -1, "descending": False, "stable": False},
         infer=_argsort_infer, kernel=_argsort_kernel,
         grad=Gradient(_scatter_back_kernel("argsort_grad"), inputs=("X",), outputs=("Indices",),
                       no_need_buffer=["X"]),
         doc="Out = X sorted along `axis` (stable), Indices = where each came from (int64)")


def _topk_infer(ctx):
    shape = ctx.shape("X")
    axis = _axis(ctx, shape)
    k = int(ctx.attr("k"))
    dim = shape[axis] if shape else 1
    if k < 1 or (dim != -1 and k > dim):
        ctx.fail_attr("k", f"1 <= k <= {dim} (the size of axis {axis} of X {fmt_shape(shape)})", k)
    out = [k if i == axis else d for i, d in enumerate(shape)]
    ctx.set("Out", out, ctx.dtype("X"))
    ctx.set("Indices", out, int64)


def _topk_kernel(ins, attrs, ctx):
    x, axis, k = ins["X"], attrs["axis"], int(attrs["k"])
    if x.ndim == 0:
        return {"Out": x.copy(), "Indices": np.zeros((), np.int64)}
    idx = stable_argsort(x, axis, attrs["largest"])
    idx = np.take(idx, np.arange(k), axis=axis)
    idx = idx.astype(np.int64)   # sorted=False allows any order: the sorted one is kept
    return {"Out": np.take_along_axis(x, idx, axis), "Indices": idx}


register("top_k_v2", inputs=["X"], outputs=["Out", "Indices"],
         attrs={"k": REQUIRED, "axis": -1, "largest": True, "sorted": True},
         infer=_topk_infer, kernel=_topk_kernel,
         grad=Gradient(_scatter_back_kernel("top_k_v2_grad"), inputs=("X",), outputs=("Indices",),
                       no_need_buffer=["X"]),
         doc="Out = the k largest (or smallest) values along `axis`, in order; Indices (int64) where they were")


# --- where -----------------------------------------------------------------------------------------
def _where_infer(ctx):
    if ctx.dtype("Condition") != bool_:
        ctx.fail("Condition", "dtype bool", str(ctx.dtype("Condition")), error=DTypeError)
    dtype = ctx.check_same_dtype("X", "Y")
    try:
        shape = broadcast_shape(broadcast_shape(ctx.shape("Condition"), ctx.shape("X")), ctx.shape("Y"))
    except BroadcastError:
        ctx.fail("Y", f"shapes broadcastable together with Condition {fmt_shape(ctx.shape('Condition'))} and "
                      f"X {fmt_shape(ctx.shape('X'))}", fmt_shape(ctx.shape("Y")))
    ctx.set("Out", shape, dtype)


def _where_grad_kernel(ins, attrs, ctx):
    cond, x, y, dout = ins["Condition"], ins["X"], ins["Y"], ins[DOUT]
    result = {}
    for slot, operand, keep in ((DX, x, cond), (DY, y, ~cond)):
        if slot in ctx.wanted:
            full = np.broadcast_to(np.where(keep, dout, dout.dtype.type(0)), dout.shape)
            result[slot] = np.array(unbroadcast(full, (1,) * (dout.ndim - operand.ndim) + operand.shape,
                                                operand.shape), dtype=operand.dtype)
    return result


register("where", inputs=["Condition", "X", "Y"], outputs=["Out"], infer=_where_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.asarray(np.where(ins["Condition"], ins["X"], ins["Y"]))},
         grad=Gradient(_where_grad_kernel, inputs=("Condition", "X", "Y"), input_grads=("X", "Y"),
                       no_need_buffer=["X", "Y"]),
         doc="Out = X where Condition else Y (all three broadcast together)")


# --- where_index (nonzero) -------------------------------------------------------------------------
register("where_index", inputs=["Condition"], outputs=["Out"],
         infer=lambda ctx: ctx.set("Out", (-1, len(ctx.shape("Condition"))), int64),
         kernel=lambda ins, attrs, ctx: {"Out": np.argwhere(ins["Condition"]).astype(np.int64)},
         grad=NO_GRADIENT,
         doc="Out = the coordinates of the nonzero elements of Condition, one row each (int64 [N, rank])")


# --- masked_select ---------------------------------------------------------------------------------
def _masked_select_infer(ctx):
    if ctx.dtype("Mask") != bool_:
        ctx.fail("Mask", "dtype bool", str(ctx.dtype("Mask")), error=DTypeError)
    try:
        broadcast_shape(ctx.shape("X"), ctx.shape("Mask"))
    except BroadcastError:
        ctx.fail("Mask", f"a shape broadcastable with X {fmt_shape(ctx.shape('X'))}", fmt_shape(ctx.shape("Mask")))
    ctx.set("Y", (-1,), ctx.dtype("X"))


def _masked_select_kernel(ins, attrs, ctx):
    x, mask = ins["X"], ins["Mask"]
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return {"Y": np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]}


def _masked_select_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, mask, dy = ins["X"], ins["Mask"], ins[DY]
    shape = np.broadcast_shapes(x.shape, mask.shape)
    full = np.zeros(shape, dtype=x.dtype)
    full[np.broadcast_to(mask, shape)] = dy
    return {DX: np.array(unbroadcast(full, (1,) * (len(shape) - x.ndim) + x.shape, x.shape), dtype=x.dtype)}


register("masked_select", inputs=["X", "Mask"], outputs=["Y"], infer=_masked_select_infer,
         kernel=_masked_select_kernel,
         grad=Gradient(_masked_select_grad_kernel, inputs=("X", "Mask"), output_grads=("Y",),
                       no_need_buffer=["X"]),
         doc="Y = the elements of X (broadcast with Mask) where Mask is True, in row-major order (1-D)")


# --- unique ----------------------------------------------------------------------------------------
def _unique_infer(ctx):
    shape = ctx.shape("X")
    axis = ctx.attr("axis")
    dtype = convert_dtype(ctx.attr("dtype"))
    if axis:
        try:
            a = axis_index(axis[0], len(shape), "axis", shape)
        except BadShape as bad:
            raise_bad_shape(ctx, bad)
        out = [-1 if i == a else d for i, d in enumerate(shape)]
        n = shape[a]
    else:
        out, n = [-1], -1 if -1 in shape else int(np.prod(shape, dtype=np.int64))
    ctx.set("Out", out, ctx.dtype("X"))
    ctx.set("Indices", [-1], dtype)
    ctx.set("Index", [n], dtype)
    ctx.set("Counts", [-1], dtype)


def _unique_kernel(ins, attrs, ctx):
    x, axis = ins["X"], attrs["axis"]
    dtype = convert_dtype(attrs["dtype"]).numpy
    flat = x.reshape(-1) if not axis else x
    out, index, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                            axis=axis[0] if axis else None)
    return {"Out": out, "Indices": index.astype(dtype), "Index": inverse.reshape(-1).astype(dtype),
            "Counts": counts.astype(dtype)}


register("unique", inputs=["X"], outputs=["Out", "Indices", "Index", "Counts"],
         attrs={"axis": [], "dtype": "int64"}, infer=_unique_infer, kernel=_unique_kernel, grad=NO_GRADIENT,
         doc="Out = the sorted distinct values of X (flattened, or slices along axis[0]); Indices = first "
             "occurrences, Index = the inverse map, Counts = how often each occurs")
