"""``paddle.*`` search, sort, select and gather/scatter functions (both modes), on the ops of
``ops/search.py`` and ``ops/indexing.py``.

Argument names, orders and defaults are the reference's: ``axis=None`` flattens (argmax/argmin,
unique), ``topk``'s ``axis=None`` is the last axis, indices are int64, sorting is stable.
"""
from __future__ import annotations

import numbers

from ..ops.apply import apply_op, apply_op_single
from . import tensor as T


def _int_axis(axis, what="axis"):
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(axis).__name__} {axis!r}")
    return int(axis)


def _arg(op_type, x, axis, keepdim, dtype, name):
    attrs = {"keepdims": bool(keepdim), "dtype": str(dtype), "flatten": axis is None,
             "axis": 0 if axis is None else _int_axis(axis)}
    return apply_op_single(op_type, {"X": x}, attrs, name_key=T._key(op_type, name))


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
    """The index of the first maximum along ``axis`` (of the flattened x when None), int64."""
    return _arg("arg_max", x, axis, keepdim, dtype, name)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None):
    """The index of the first minimum along ``axis`` (of the flattened x when None), int64."""
    return _arg("arg_min", x, axis, keepdim, dtype, name)


def _argsort(x, axis, descending, stable, name):
    return apply_op("argsort", {"X": x}, {"axis": _int_axis(axis), "descending": bool(descending),
                                          "stable": bool(stable)}, name_key=T._key("argsort", name))


def argsort(x, axis=-1, descending=False, stable=False, name=None):
    """The indices (int64) that sort x along ``axis``; always stable."""
    return _argsort(x, axis, descending, stable, name)["Indices"][0]


def sort(x, axis=-1, descending=False, stable=False, name=None):
    """x sorted along ``axis`` (stable); differentiable."""
    return _argsort(x, axis, descending, stable, name)["Out"][0]


def msort(x, name=None):
    """x sorted along axis 0."""
    return sort(x, axis=0)


def topk(x, k, axis=None, largest=True, sorted=True, name=None):  # noqa: A002
    """``(values, indices)`` of the k largest (or smallest) along ``axis`` (default the last)."""
    k = int(k.item()) if hasattr(k, "item") and not isinstance(k, numbers.Integral) else int(k)
    outs = apply_op("top_k_v2", {"X": x}, {"k": k, "axis": -1 if axis is None else _int_axis(axis),
                                           "largest": bool(largest), "sorted": bool(sorted)},
                    name_key=T._key("top_k_v2", name))
    return outs["Out"][0], outs["Indices"][0]


def where(condition, x=None, y=None, name=None):
    """x where condition else y (broadcast; a number becomes a constant of the other's dtype);
    with only ``condition``: ``nonzero(condition, as_tuple=True)``."""
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if x is None or y is None:
        raise ValueError("where(): give both x and y, or neither")
    if isinstance(x, numbers.Number):
        x = T.full([], x, y.dtype)
    if isinstance(y, numbers.Number):
        y = T.full([], y, x.dtype)
    return apply_op_single("where", {"Condition": condition, "X": x, "Y": y}, name_key=T._key("where", name))


def nonzero(x, as_tuple=False):
    """The coordinates of the nonzero elements: an int64 [N, rank] tensor, or (as_tuple) one
    [N] tensor per axis."""
    cond = x if str(x.dtype) == "bool" else T.cast(x, "bool")
    out = apply_op_single("where_index", {"Condition": cond}, name_key=T._key("where_index"))
    if not as_tuple:
        return out
    rank = len(x.shape)
    if rank == 0:
        return (T.reshape(out, [-1]),)
    return tuple(T.squeeze(_slice_col(out, i), [1]) for i in range(rank))


def _slice_col(x, i):
    return apply_op_single("slice", {"Input": x}, {"axes": [1], "starts": [i], "ends": [i + 1]},
                           name_key=T._key("slice"))


def argwhere(x, name=None):
    """``nonzero(x)``: the [N, rank] int64 coordinates of the nonzero elements."""
    return nonzero(x)


def masked_select(x, mask, name=None):
    """The elements of x where mask (broadcast) is True, as a 1-D tensor."""
    return apply_op_single("masked_select", {"X": x, "Mask": mask}, out_slot="Y",
                           name_key=T._key("masked_select", name))


def masked_fill(x, mask, value, name=None):
    """x with ``value`` where mask is True (``where(mask, value, x)``)."""
    return where(mask, value if not isinstance(value, numbers.Number) else T.full([], value, x.dtype), x)


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None, dtype="int64",
           name=None):
    """The sorted distinct values of x (flattened when axis is None), and optionally first
    indices, the inverse map and counts (no gradient)."""
    attrs = {"axis": [] if axis is None else [_int_axis(axis)], "dtype": str(dtype)}
    outs = apply_op("unique", {"X": x}, attrs, name_key=T._key("unique", name))
    result = [outs["Out"][0]]
    for flag, slot in ((return_index, "Indices"), (return_inverse, "Index"), (return_counts, "Counts")):
        if flag:
            result.append(outs[slot][0])
    return result[0] if len(result) == 1 else tuple(result)


def gather(x, index, axis=None, name=None):
    """The slices of x at ``index`` (1-D or 0-D) along ``axis`` (default 0)."""
    axis = 0 if axis is None else (int(axis.item()) if hasattr(axis, "item") else _int_axis(axis))
    return apply_op_single("gather", {"X": x, "Index": index}, {"axis": axis}, name_key=T._key("gather", name))


def index_select(x, index, axis=0, name=None):
    """The slices of x at the 1-D ``index`` along ``axis`` (op ``gather``)."""
    if len(index.shape) != 1:
        raise ValueError(f"index_select(): index must be 1-D, got shape {list(index.shape)}")
    return gather(x, index, axis, name)


def gather_nd(x, index, name=None):
    """``out[i...] = x[index[i..., 0], ..., index[i..., k-1]]``."""
    return apply_op_single("gather_nd", {"X": x, "Index": index}, name_key=T._key("gather_nd", name))


def scatter(x, index, updates, overwrite=True, name=None):
    """x with rows ``index`` replaced by ``updates`` (the last duplicate wins), or zeroed and summed
    (``overwrite=False``)."""
    return apply_op_single("scatter", {"X": x, "Ids": index, "Updates": updates}, {"overwrite": bool(overwrite)},
                           name_key=T._key("scatter", name))


def scatter_nd_add(x, index, updates, name=None):
    """x with ``updates`` added at the coordinates in ``index`` (duplicates accumulate)."""
    return apply_op_single("scatter_nd_add", {"X": x, "Index": index, "Updates": updates},
                           name_key=T._key("scatter_nd_add", name))


def scatter_nd(index, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at ``index``."""
    return scatter_nd_add(T.zeros(shape, updates.dtype), index, updates, name)


def take_along_axis(arr, indices, axis, broadcast=True):
    """The values of ``arr`` at ``indices`` along ``axis`` (same rank)."""
    return apply_op_single("take_along_axis", {"Input": arr, "Index": indices}, {"Axis": _int_axis(axis)},
                           out_slot="Result", name_key=T._key("take_along_axis"))


def index_sample(x, index):
    """``out[i, j] = x[i, index[i, j]]`` for 2-D x and index."""
    return take_along_axis(x, index, 1)


def kthvalue(x, k, axis=None, keepdim=False, name=None):
    """``(values, indices)`` of the k-th smallest along ``axis`` (default the last)."""
    axis = -1 if axis is None else _int_axis(axis)
    values, indices = topk(x, k, axis=axis, largest=False)
    rank = len(x.shape)
    a = axis % rank
    v = apply_op_single("slice", {"Input": values}, {"axes": [a], "starts": [k - 1], "ends": [k],
                                                     "decrease_axis": [] if keepdim else [a]}, name_key=T._key("slice"))
    i = apply_op_single("slice", {"Input": indices}, {"axes": [a], "starts": [k - 1], "ends": [k],
                                                      "decrease_axis": [] if keepdim else [a]}, name_key=T._key("slice"))
    return v, i


def median(x, axis=None, keepdim=False, mode="avg", name=None):
    """The median along ``axis`` (of all elements when None).  ``mode='avg'``: the mean of the two
    middle values for an even count, float32 (float64 for float64 x); ``mode='min'``: the lower
    middle value, with its index (int64) when ``axis`` is given, as the reference."""
    if mode not in ("avg", "min"):
        raise ValueError(f"median(): mode must be 'avg' or 'min', got {mode!r}")
    rank = len(x.shape)
    flat = axis is None
    if flat:
        x, axis = T.reshape(x, [-1]), 0
    axis = _int_axis(axis) % max(len(x.shape), 1)
    n = x.shape[axis]
    if n is None or n < 0:
        raise ValueError("median(): the size of the reduced axis must be known")
    if mode == "min":
        values, indices = kthvalue(x, (n - 1) // 2 + 1, axis=axis, keepdim=keepdim and not flat)
        if flat:
            return T.reshape(values, [1] * rank) if keepdim else values
        return values, indices
    if str(x.dtype) != "float64":
        x = T.cast(x, "float32")
    s = sort(x, axis=axis)
    lo, hi = (n - 1) // 2, n // 2
    part = apply_op_single("slice", {"Input": s}, {"axes": [axis], "starts": [lo], "ends": [hi + 1]},
                           name_key=T._key("slice"))
    out = T.mean(part, axis=axis, keepdim=keepdim and not flat)
    return T.reshape(out, [1] * rank) if flat and keepdim else out


__all__ = ["argmax", "argmin", "argsort", "argwhere", "gather", "gather_nd", "index_sample", "index_select",
           "kthvalue", "masked_fill", "masked_select", "median", "msort", "nonzero", "scatter", "scatter_nd",
           "scatter_nd_add", "sort", "take_along_axis", "topk", "unique", "where"]
