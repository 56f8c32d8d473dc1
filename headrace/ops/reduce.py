"""Reductions: ``reduce_sum``/``reduce_mean``/``reduce_max``/``reduce_min`` over ``dim``, and ``mean``.

``dim`` lists the axes (negative ones count from the end); ``reduce_all=True`` or an empty ``dim``
reduces every axis.  ``keep_dim`` keeps reduced axes as size 1; otherwise they are dropped, so
reducing everything gives a 0-D tensor.  The output keeps the input's dtype.  float32 sums and
means accumulate in float64 and round once.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import fmt_shape
from .infer_helpers import reduce_shape
from .registry import register

FLOATS = (float32, float64)
NUMBERS = (float32, float64, int32, int64)
_REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False}


def _dims(attrs) -> list:
    dims = attrs["dim"]
    return [dims] if isinstance(dims, int) else list(dims)


def _infer_reduce(allowed):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        shape = ctx.shape("X")
        dims = _dims(ctx.attrs)
        try:
            out_shape, _ = reduce_shape(shape, dims, ctx.attr("keep_dim"), ctx.attr("reduce_all"))
        except ValueError as exc:
            rank = len(shape)
            ctx.fail_attr("dim", f"distinct axes in [-{rank}, {rank}) for X of shape {fmt_shape(shape)} ({exc})",
                          dims)
        ctx.set("Out", out_shape, dtype)
    return infer


def _accumulator(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype.kind == "f" else dtype


def _reduce_kernel(compute):
    def kernel(ins, attrs):
        x = ins["X"]
        _, axes = reduce_shape(x.shape, _dims(attrs), attrs["keep_dim"], attrs["reduce_all"])
        out = compute(x, tuple(axes), attrs["keep_dim"])
        return {"Out": np.asarray(out).astype(x.dtype, copy=False)}
    return kernel


def _sum(x, axes, keep):
    return np.sum(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))


def _mean(x, axes, keep):
    return np.mean(x, axis=axes, keepdims=keep, dtype=np.float64)


def _max(x, axes, keep):
    return np.max(x, axis=axes, keepdims=keep)


def _min(x, axes, keep):
    return np.min(x, axis=axes, keepdims=keep)


_REDUCTIONS = {
    "reduce_sum": (_sum, NUMBERS, "Out = sum of X over `dim`"),
    "reduce_mean": (_mean, FLOATS, "Out = mean of X over `dim` (float only)"),
    "reduce_max": (_max, NUMBERS, "Out = maximum of X over `dim`"),
    "reduce_min": (_min, NUMBERS, "Out = minimum of X over `dim`"),
}

for _type, (_compute, _allowed, _doc) in _REDUCTIONS.items():
    register(
        _type,
        inputs=["X"],
        outputs=["Out"],
        attrs=dict(_REDUCE_ATTRS),
        infer=_infer_reduce(_allowed),
        kernel=_reduce_kernel(_compute),
        doc=_doc + "; reduce_all=True or an empty `dim` reduces every axis, keep_dim keeps them as 1",
    )


# --- mean: the mean of every element, a 0-D tensor ------------------------------------------------
def _mean_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    ctx.set("Out", (), dtype)


register(
    "mean",
    inputs=["X"],
    outputs=["Out"],
    infer=_mean_infer,
    kernel=lambda ins, attrs: {"Out": np.asarray(np.mean(ins["X"], dtype=np.float64), dtype=ins["X"].dtype)},
    doc="Out = the mean of all elements of X (a 0-D tensor)",
)
