"""Counting and bucketing ops, none differentiable: ``searchsorted``, ``bincount``, ``histogram``,
``unique_consecutive``.

``searchsorted`` finds, per value, the insertion index into the last axis of a sorted sequence
(``right``: after equal entries); ``bincount`` counts non-negative integers (weighted sums with
``Weights``), at least ``minlength`` bins; ``histogram`` counts values in ``bins`` equal-width bins
over [min, max] (the data's range when both are 0), the last bin closed.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import DTypeError, fmt_shape
from .gradrule import NO_GRADIENT
from .registry import optional, register

NUMBERS = (float32, float64, int32, int64)


def _searchsorted_infer(ctx):
    seq, values = ctx.shape("SortedSequence"), ctx.shape("Values")
    if len(seq) > 1 and (len(values) != len(seq) or any(a != b and -1 not in (a, b)
                                                        for a, b in zip(seq[:-1], values[:-1]))):
        ctx.fail("Values", f"the leading dims of SortedSequence {fmt_shape(seq)}", fmt_shape(values))
    ctx.check_same_dtype("SortedSequence", "Values")
    ctx.set("Out", values, int32 if ctx.attr("out_int32") else int64)


def _searchsorted_kernel(ins, attrs, ctx):
    seq, values = ins["SortedSequence"], ins["Values"]
    side = "right" if attrs["right"] else "left"
    dtype = np.int32 if attrs["out_int32"] else np.int64
    if seq.ndim == 1:
        return {"Out": np.searchsorted(seq, values, side=side).astype(dtype)}
    flat_seq, flat_val = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(flat_seq, flat_val)])
    return {"Out": out.reshape(values.shape).astype(dtype)}


register("searchsorted", inputs=["SortedSequence", "Values"], outputs=["Out"],
         attrs={"out_int32": False, "right": False}, infer=_searchsorted_infer, kernel=_searchsorted_kernel,
         grad=NO_GRADIENT, doc="Out = where each value would be inserted into the sorted last axis")


def _bincount_infer(ctx):
    shape = ctx.shape("X")
    ctx.check_dtype("X", (int32, int64))
    if len(shape) != 1:
        ctx.fail("X", "a 1-D tensor", fmt_shape(shape))
    dtype = int64
    if ctx.has("Weights"):
        if ctx.shape("Weights") != shape:
            ctx.fail("Weights", f"shape {fmt_shape(shape)} (X's)", fmt_shape(ctx.shape("Weights")))
        dtype = ctx.dtype("Weights")
    ctx.set("Out", (-1,), dtype)


def _bincount_kernel(ins, attrs, ctx):
    x = ins["X"]
    if x.size and x.min() < 0:
        raise ValueError(f"op `bincount`: X must be non-negative, got {int(x.min())}")
    weights = ins.get("Weights")
    out = np.bincount(x, weights=weights, minlength=int(attrs["minlength"]))
    return {"Out": out.astype(weights.dtype if weights is not None else np.int64)}


register("bincount", inputs=["X", optional("Weights")], outputs=["Out"], attrs={"minlength": 0},
         infer=_bincount_infer, kernel=_bincount_kernel, grad=NO_GRADIENT,
         doc="Out[k] = how often k occurs in X (or the sum of Weights where it does)")


def _histogram_infer(ctx):
    dtype = ctx.check_dtype("X", NUMBERS)
    bins = int(ctx.attr("bins"))
    if bins < 1:
        ctx.fail_attr("bins", "a positive count", bins)
    if ctx.attr("min") > ctx.attr("max"):
        ctx.fail_attr("min", f"a value <= max ({ctx.attr('max')})", ctx.attr("min"))
    if dtype not in NUMBERS:
        ctx.fail("X", "a number dtype", str(dtype), error=DTypeError)
    ctx.set("Out", (bins,), int64)


def _histogram_kernel(ins, attrs, ctx):
    x = ins["X"].astype(np.float64).ravel()
    lo, hi = float(attrs["min"]), float(attrs["max"])
    if lo == 0 and hi == 0 and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = np.histogram(x, bins=int(attrs["bins"]), range=(lo, hi))
    return {"Out": counts.astype(np.int64)}


register("histogram", inputs=["X"], outputs=["Out"], attrs={"bins": 100, "min": 0.0, "max": 0.0},
         infer=_histogram_infer, kernel=_histogram_kernel, grad=NO_GRADIENT,
         doc="Out = counts of X in `bins` equal bins over [min, max] (the data's range when both are 0)")


def _unique_consecutive_infer(ctx):
    shape, axis = ctx.shape("X"), ctx.attr("axis")
    dtype = ctx.attr("dtype")
    if axis:
        a = int(axis[0])
        if not -len(shape) <= a < len(shape):
            ctx.fail_attr("axis", f"an axis of X {fmt_shape(shape)}", axis)
        a %= len(shape)
        ctx.set("Out", [-1 if i == a else d for i, d in enumerate(shape)], ctx.dtype("X"))
        ctx.set("Index", (shape[a],), dtype)
    else:
        ctx.set("Out", (-1,), ctx.dtype("X"))
        ctx.set("Index", (-1 if -1 in shape else int(np.prod(shape, dtype=np.int64)),), dtype)
    ctx.set("Counts", (-1,), dtype)


def _unique_consecutive_kernel(ins, attrs, ctx):
    x, axis = ins["X"], attrs["axis"]
    a = int(axis[0]) % x.ndim if axis else 0
    lines = np.moveaxis(x, a, 0) if axis else x.reshape(-1)
    n = lines.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        flat = lines.reshape(n, -1)
        change = np.any(flat[1:] != flat[:-1], axis=1)
        starts = np.concatenate([[0], np.nonzero(change)[0] + 1]).astype(np.int64)
    dtype = np.dtype(str(attrs["dtype"]))
    out = lines[starts]
    inverse = np.cumsum(np.isin(np.arange(n), starts)) - 1
    counts = np.diff(np.append(starts, n))
    return {"Out": np.ascontiguousarray(np.moveaxis(out, 0, a) if axis else out),
            "Index": inverse.astype(dtype), "Counts": counts.astype(dtype)}


register("unique_consecutive", inputs=["X"], outputs=["Out", "Index", "Counts"],
         attrs={"axis": [], "dtype": "int64"}, infer=_unique_consecutive_infer, kernel=_unique_consecutive_kernel,
         grad=NO_GRADIENT,
         doc="Out = X (flattened, or slices along axis[0]) with runs of equal neighbours collapsed; Index maps "
             "each element to its run, Counts are the run lengths")
