"""More ``paddle.*`` tensor functions (both modes): cumulative ops, bucketing and counting,
scatter-style updates built on ``setitem``/``scatter_nd_add``, splits and stacks, and small
composites (lerp, isin, quantile, tensordot, cdist ...).  Semantics follow the reference's
``python/paddle/tensor/*.py``; composites get their gradients from the ops they are made of.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core import context
from ..eager.tensor import Tensor
from ..ops.apply import apply_op, apply_op_single
from . import tensor as T
from . import tensor_manip as TM
from . import tensor_search as TS


def _axis_or_flat(x, axis):
    return (T.reshape(x, [-1]), 0) if axis is None else (x, int(axis))


def cumprod(x, dim=None, dtype=None, name=None):
    """The running product along ``dim`` (of the flattened x when None)."""
    if dtype is not None:
        x = T.cast(x, dtype)
    x, dim = _axis_or_flat(x, dim)
    return apply_op_single("cumprod", {"X": x}, {"dim": dim}, name_key=T._key("cumprod", name))


def _scan(op, x, axis, dtype, name):
    x, axis = _axis_or_flat(x, axis)
    outs = apply_op(op, {"X": x}, {"axis": axis}, name_key=T._key(op, name))
    idx = outs["Indices"][0]
    return outs["Out"][0], (idx if str(dtype) == "int64" else T.cast(idx, dtype))


def cummax(x, axis=None, dtype="int64", name=None):
    """``(values, indices)`` of the running maximum (the latest index on ties)."""
    return _scan("cummax", x, axis, dtype, name)


def cummin(x, axis=None, dtype="int64", name=None):
    """``(values, indices)`` of the running minimum (the latest index on ties)."""
    return _scan("cummin", x, axis, dtype, name)


def logcumsumexp(x, axis=None, dtype=None, name=None):
    """``log(cumsum(exp(x)))`` along ``axis`` (flattened when None), without overflow."""
    if dtype is not None:
        x = T.cast(x, dtype)
    x, axis = _axis_or_flat(x, axis)
    return apply_op_single("logcumsumexp", {"X": x}, {"axis": axis}, name_key=T._key("logcumsumexp", name))


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """Insertion indices of ``values`` into the sorted last axis of ``sorted_sequence``."""
    return apply_op_single("searchsorted", {"SortedSequence": sorted_sequence, "Values": values},
                           {"out_int32": bool(out_int32), "right": bool(right)}, name_key=T._key("searchsorted", name))


def bucketize(x, sorted_sequence, out_int32=False, right=False, name=None):
    """``searchsorted(sorted_sequence, x)`` for a 1-D sorted sequence."""
    if len(sorted_sequence.shape) != 1:
        raise ValueError(f"bucketize(): sorted_sequence must be 1-D, got shape {list(sorted_sequence.shape)}")
    return searchsorted(sorted_sequence, x, out_int32, right, name)


def bincount(x, weights=None, minlength=0, name=None):
    """Counts of each non-negative integer in x (or sums of ``weights``)."""
    inputs = {"X": x} if weights is None else {"X": x, "Weights": weights}
    return apply_op_single("bincount", inputs, {"minlength": int(minlength)}, name_key=T._key("bincount", name))


def histogram(input, bins=100, min=0, max=0, weight=None, density=False, name=None):  # noqa: A002
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    if weight is not None or density:
        raise NotImplementedError("histogram(): weight and density are not supported yet")
    return apply_op_single("histogram", {"X": input}, {"bins": int(bins), "min": float(min), "max": float(max)},
                           name_key=T._key("histogram", name))


def diff(x, n=1, axis=-1, prepend=None, append=None, name=None):
    """The n-th forward difference along ``axis`` (``prepend``/``append`` joined first)."""
    axis = int(axis) % len(x.shape)
    if prepend is not None or append is not None:
        x = T.concat([t for t in (prepend, x, append) if t is not None], axis=axis)
    for _ in range(int(n)):
        size = x.shape[axis]
        hi = T.slice(x, [axis], [1], [size])
        lo = T.slice(x, [axis], [0], [size - 1])
        x = T.subtract(hi, lo)
    return x


def _along(axis, index):
    return (slice(None),) * int(axis) + (index,)


def _clone(x):
    return T.assign(x)


def index_fill(x, index, axis, value, name=None):
    """x with the slices at ``index`` along ``axis`` set to ``value``."""
    out = _clone(x)
    out[_along(axis, index)] = value
    return out


def select_scatter(x, values, axis, index, name=None):
    """x with the slice ``index`` of ``axis`` replaced by ``values``."""
    out = _clone(x)
    out[_along(axis, int(index))] = values
    return out


def slice_scatter(x, value, axes=(0,), starts=(0,), ends=None, strides=(1,), name=None):
    """x with the strided slice replaced by ``value``."""
    index = [slice(None)] * len(x.shape)
    ends = ends if ends is not None else [x.shape[a] for a in axes]
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[int(a)] = slice(int(s), int(e), int(st))
    out = _clone(x)
    out[tuple(index)] = value
    return out


def index_add(x, index, axis, value, name=None):
    """x with ``value``'s slices added at ``index`` along ``axis`` (duplicates accumulate)."""
    axis = int(axis) % len(x.shape)
    perm = [axis] + [a for a in range(len(x.shape)) if a != axis]
    inverse = list(np.argsort(perm))
    moved = T.transpose(x, perm)
    updates = T.transpose(value, perm)
    out = TS.scatter_nd_add(moved, T.unsqueeze(T.cast(index, "int64"), [1]), updates)
    return T.transpose(out, inverse)


def put_along_axis(arr, indices, values, axis, reduce="assign", include_self=True, broadcast=True):
    """``arr`` with ``values`` put at ``indices`` along ``axis`` (``reduce``: 'assign' or 'add')."""
    rank = len(arr.shape)
    axis = int(axis) % rank
    grids = np.ix_(*[np.arange(n) for n in indices.shape])
    pieces = []
    for a in range(rank):
        if a == axis:
            pieces.append(T.cast(indices, "int64"))
        else:
            pieces.append(T.assign(np.broadcast_to(grids[a], indices.shape).astype(np.int64)))
    if isinstance(values, numbers.Number):
        values = T.full(list(indices.shape), values, arr.dtype)
    elif list(values.shape) != list(indices.shape):
        values = TM.expand(values, list(indices.shape))
    if reduce == "add":
        return TS.scatter_nd_add(arr, TM.stack(pieces, axis=-1), values)
    if reduce != "assign":
        raise NotImplementedError(f"put_along_axis(): reduce={reduce!r} is not supported yet ('assign', 'add')")
    out = _clone(arr)
    out[tuple(pieces)] = values
    return out


def take(x, index, mode="raise", name=None):
    """The elements of the flattened x at ``index`` (negative indices count from the end)."""
    if mode != "raise":
        raise NotImplementedError(f"take(): mode={mode!r} is not supported yet")
    return T.reshape(x, [-1])[index]


def repeat_interleave(x, repeats, axis=None, name=None):
    """Each element (or slice along ``axis``) repeated ``repeats`` times (an int, or a tensor in
    eager mode)."""
    x, axis = _axis_or_flat(x, axis)
    if isinstance(repeats, Tensor):
        positions = np.repeat(np.arange(x.shape[axis]), repeats.numpy().reshape(-1))
        return TS.gather(x, Tensor(positions.astype(np.int64)), axis=axis)
    if not isinstance(repeats, numbers.Integral):
        raise NotImplementedError("repeat_interleave(): repeats given as a static Variable is not supported yet")
    positions = np.repeat(np.arange(x.shape[axis]), int(repeats)).astype(np.int64)
    index = T.assign(positions) if context.in_static_mode() else Tensor(positions)
    return TS.gather(x, index, axis=axis)


def tensor_split(x, num_or_indices, axis=0, name=None):
    """x split into ``num`` nearly equal parts (the first ones one longer), or at ``indices``."""
    axis = int(axis) % len(x.shape)
    n = x.shape[axis]
    if isinstance(num_or_indices, numbers.Integral):
        k = int(num_or_indices)
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in num_or_indices] + [n]
    return [T.slice(x, [axis], [lo], [max(lo, hi)]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def hsplit(x, num_or_indices, name=None):
    return tensor_split(x, num_or_indices, axis=1 if len(x.shape) > 1 else 0)


def vsplit(x, num_or_indices, name=None):
    return tensor_split(x, num_or_indices, axis=0)


def dsplit(x, num_or_indices, name=None):
    return tensor_split(x, num_or_indices, axis=2)


def column_stack(x, name=None):
    """1-D tensors as columns (2-D ones as they are), joined along axis 1."""
    cols = [T.reshape(t, [-1, 1]) if len(t.shape) < 2 else t for t in x]
    return T.concat(cols, axis=1)


def row_stack(x, name=None):
    return TM.vstack(x)


def dstack(x, name=None):
    return T.concat([TM.atleast_3d(t) for t in x], axis=2)


def _indices(fn, row, col, offset):
    col = row if col is None else col
    return T.assign(np.stack(fn(int(row), int(offset), int(col))).astype(np.int64))


def tril_indices(row, col=None, offset=0, dtype="int64"):
    """The [2, N] coordinates of the lower triangle of a row x col matrix (from ``offset``)."""
    return T.cast(_indices(np.tril_indices, row, col, offset), dtype)


def triu_indices(row, col=None, offset=0, dtype="int64"):
    """The [2, N] coordinates of the upper triangle of a row x col matrix (from ``offset``)."""
    return T.cast(_indices(np.triu_indices, row, col, offset), dtype)


def isin(x, test_x, assume_unique=False, invert=False, name=None):
    """Whether each element of x occurs in ``test_x`` (bool)."""
    flat = T.reshape(test_x, [-1])
    hits = apply_op_single("equal", {"X": T.unsqueeze(x, [-1]), "Y": flat}, name_key=T._key("equal"))
    out = T._reduce("reduce_any", hits, [-1], False, "isin")
    return apply_op_single("logical_not", {"X": out}, name_key=T._key("logical_not")) if invert else out


def _pred(op, x):
    return apply_op_single(op, {"X": x}, name_key=T._key(op))


def isposinf(x, name=None):
    return apply_op_single("logical_and", {"X": _pred("isinf_v2", x), "Y": _pred("logical_not", _pred("signbit", x))},
                           name_key=T._key("isposinf"))


def isneginf(x, name=None):
    return apply_op_single("logical_and", {"X": _pred("isinf_v2", x), "Y": _pred("signbit", x)},
                           name_key=T._key("isneginf"))


def isreal(x, name=None):
    """True everywhere (headrace has no complex dtypes)."""
    return apply_op_single("fill_any_like", {"X": x}, {"value": 1.0, "dtype": "bool"}, name_key=T._key("isreal"))


def lerp(x, y, weight, name=None):
    """``x + weight * (y - x)`` (weight a number or a tensor)."""
    diff_ = T.subtract(y, x)
    step = T.scale(diff_, float(weight)) if isinstance(weight, numbers.Number) else T.multiply(weight, diff_)
    return T.add(x, step)


def positive(x, name=None):
    """x itself (``+x``)."""
    return x


def ldexp(x, y, name=None):
    """``x * 2 ** y``."""
    two = T.full([], 2.0, x.dtype)
    return T.multiply(x, T.pow(TM.expand(two, list(y.shape)) if len(y.shape) else two, T.cast(y, x.dtype)))


def sinc(x, name=None):
    """``sin(pi x) / (pi x)``, 1 at 0."""
    from .tensor_math import _F
    px = T.scale(x, np.pi)
    zero = apply_op_single("equal", {"X": x, "Y": T.zeros([], x.dtype)}, name_key=T._key("equal"))
    safe = TS.where(zero, T.ones([], x.dtype), px)
    return TS.where(zero, T.ones([], x.dtype), T.divide(_F["sin"](safe), safe))


def unique_consecutive(x, return_inverse=False, return_counts=False, axis=None, dtype="int64", name=None):
    """x (flattened when axis is None) with runs of equal neighbours collapsed, and optionally the
    inverse map and the run lengths (no gradient)."""
    attrs = {"axis": [] if axis is None else [int(axis)], "dtype": str(dtype)}
    outs = apply_op("unique_consecutive", {"X": x}, attrs, name_key=T._key("unique_consecutive", name))
    result = [outs["Out"][0]]
    if return_inverse:
        result.append(outs["Index"][0])
    if return_counts:
        result.append(outs["Counts"][0])
    return result[0] if len(result) == 1 else tuple(result)


def mode(x, axis=-1, keepdim=False, name=None):
    """``(values, indices)``: the most frequent value along ``axis`` (the smallest on ties) and its
    last position (int64)."""
    outs = apply_op("mode", {"X": x}, {"axis": int(axis), "keepdim": bool(keepdim)}, name_key=T._key("mode", name))
    return outs["Out"][0], outs["Indices"][0]


def polygamma(x, n, name=None):
    """The n-th derivative of digamma (x > 0 for n >= 1)."""
    return apply_op_single("polygamma", {"X": x}, {"n": int(n)}, name_key=T._key("polygamma", name))


__all__ = ["mode", "polygamma", "unique_consecutive", "bincount", "bucketize", "column_stack", "cummax", "cummin", "cumprod", "diff", "dsplit", "dstack",
           "histogram", "hsplit", "index_add", "index_fill", "isin", "isneginf", "isposinf", "isreal", "ldexp", "lerp",
           "logcumsumexp", "positive", "put_along_axis", "repeat_interleave", "row_stack", "searchsorted",
           "select_scatter", "sinc", "slice_scatter", "take", "tensor_split", "tril_indices", "triu_indices",
           "vsplit"]
