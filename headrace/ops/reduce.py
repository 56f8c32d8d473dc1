"""Reductions: ``reduce_sum``/``reduce_mean``/``reduce_max``/``reduce_min`` over ``dim``, and ``mean``.

``dim`` lists the axes (negative ones count from the end); ``reduce_all=True`` or an empty ``dim``
reduces every axis.  ``keep_dim`` keeps reduced axes as size 1; otherwise they are dropped, so
reducing everything gives a 0-D tensor.  The output keeps the input's dtype.  float32 sums and
means accumulate in float64 and round once.

Gradients (``<type>_grad``): ``reduce_sum``/``reduce_mean``/``mean`` read ``X`` for its shape only
and broadcast ``Out@GRAD`` back (divided by the number of reduced elements for the means).
``reduce_max``/``reduce_min`` read ``X`` and ``Out``: the gradient goes to every element equal to
the extreme, each receiving the *full* ``Out@GRAD`` (ties are not split), as the reference's
``max``/``min`` do (its ``amax``/``amin`` split evenly instead).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import ShapeError, fmt_shape
from .gradrule import Gradient, grad_slot
from .infer_helpers import reduce_shape
from .registry import register

FLOATS = (float32, float64)
NUMBERS = (float32, float64, int32, int64)
# ``rank1_result``: a reduction to a single value gives shape [1] instead of 0-D, as fluid 1.x
# (``fluid.layers.mean`` / ``reduce_*`` set it; ``paddle.mean`` and friends keep 0-D).
_REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False, "rank1_result": False}


def _out_shape(x_shape, attrs):
    out_shape, axes = reduce_shape(x_shape, _dims(attrs), attrs["keep_dim"], attrs["reduce_all"])
    if attrs.get("rank1_result") and len(out_shape) == 0:
        out_shape = (1,)
    return tuple(out_shape), axes


def _dims(attrs) -> list:
    dims = attrs["dim"]
    return [dims] if isinstance(dims, int) else list(dims)


def _infer_reduce(allowed):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        shape = ctx.shape("X")
        dims = _dims(ctx.attrs)
        try:
            out_shape, _ = _out_shape(shape, ctx.attrs)
        except ValueError as exc:
            rank = len(shape)
            ctx.fail_attr("dim", f"distinct axes in [-{rank}, {rank}) for X of shape {fmt_shape(shape)} ({exc})",
                          dims)
        ctx.set("Out", out_shape, dtype)
    return infer


def _accumulator(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype.kind == "f" else dtype


def _reduce_kernel(compute):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        out_shape, axes = _out_shape(x.shape, attrs)
        out = compute(x, tuple(axes), attrs["keep_dim"])
        return {"Out": np.asarray(out).astype(x.dtype, copy=False).reshape(out_shape)}
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

# --- gradients ---------------------------------------------------------------------------------
X_GRAD, OUT_GRAD = grad_slot("X"), grad_slot("Out")


def _kept_shape(op_type, x_shape, dout, attrs):
    """X's shape with the reduced axes set to 1, after checking ``Out@GRAD`` has Out's shape."""
    dims, reduce_all = _dims(attrs), attrs["reduce_all"]
    out_shape, _ = _out_shape(x_shape, attrs)
    if tuple(dout.shape) != tuple(out_shape):
        raise ShapeError(f"op `{op_type}`: input `{OUT_GRAD}` has shape {fmt_shape(dout.shape)}, expected "
                         f"{fmt_shape(out_shape)} (X of shape {fmt_shape(x_shape)} reduced over dim={dims}, "
                         f"keep_dim={attrs['keep_dim']}, reduce_all={reduce_all})")
    kept, _ = reduce_shape(x_shape, dims, True, reduce_all)
    return kept


def _broadcast_back(dout_kept, x_shape, dtype):
    """``dout_kept`` (X's rank, reduced axes of size 1) written out at X's full shape."""
    if tuple(dout_kept.shape) == tuple(x_shape):  # nothing was reduced away: the identity
        return np.asarray(dout_kept, dtype=dtype)
    dx = np.empty(x_shape, dtype=dtype)
    np.copyto(dx, dout_kept)
    return dx


def _sum_grad_kernel(op_type, mean):
    """dX = Out@GRAD broadcast to X's shape (divided by the reduced count for a mean); X shape-only."""
    def kernel(ins, attrs, ctx):
        if X_GRAD not in ctx.wanted:
            return {}
        x, dout = ins["X"], ins[OUT_GRAD]
        kept = _kept_shape(op_type, x.shape, dout, attrs)
        dout_kept = dout.reshape(kept)
        if mean:
            count = x.size // max(dout.size, 1)
            if count > 1:
                dout_kept = np.multiply(dout_kept, 1.0 / count, dtype=x.dtype)
        return {X_GRAD: _broadcast_back(dout_kept, x.shape, x.dtype)}
    return kernel


def _extreme_grad_kernel(op_type):
    """dX = Out@GRAD where X equals Out (every tied extreme gets the full gradient), else 0."""
    def kernel(ins, attrs, ctx):
        if X_GRAD not in ctx.wanted:
            return {}
        x, out, dout = ins["X"], ins["Out"], ins[OUT_GRAD]
        kept = _kept_shape(op_type, x.shape, dout, attrs)
        hit = np.equal(x, out.reshape(kept))
        return {X_GRAD: np.asarray(np.multiply(hit, dout.reshape(kept), dtype=x.dtype))}
    return kernel


_GRAD_KERNELS = {
    "reduce_sum": (_sum_grad_kernel("reduce_sum_grad", mean=False), (), ("X",)),
    "reduce_mean": (_sum_grad_kernel("reduce_mean_grad", mean=True), (), ("X",)),
    "reduce_max": (_extreme_grad_kernel("reduce_max_grad"), ("Out",), ()),
    "reduce_min": (_extreme_grad_kernel("reduce_min_grad"), ("Out",), ()),
}

for _type, (_compute, _allowed, _doc) in _REDUCTIONS.items():
    _kernel, _extra, _shape_only = _GRAD_KERNELS[_type]
    register(
        _type,
        inputs=["X"],
        outputs=["Out"],
        attrs=dict(_REDUCE_ATTRS),
        infer=_infer_reduce(_allowed),
        kernel=_reduce_kernel(_compute),
        grad=Gradient(_kernel, inputs=("X",), outputs=_extra, like={X_GRAD: "X"}, no_need_buffer=_shape_only,
                      views={X_GRAD: OUT_GRAD}),
        doc=_doc + "; reduce_all=True or an empty `dim` reduces every axis, keep_dim keeps them as 1",
    )


# --- mean: the mean of every element, a 0-D tensor (shape [1] with rank1_result, as fluid 1.x) ---
def _mean_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    ctx.set("Out", (1,) if ctx.attr("rank1_result") else (), dtype)


def _mean_kernel(ins, attrs, ctx):
    x = ins["X"]
    out = np.asarray(np.mean(x, dtype=np.float64), dtype=x.dtype)
    return {"Out": out.reshape(1) if attrs["rank1_result"] else out}


def _mean_grad_kernel(ins, attrs, ctx):
    """dX = Out@GRAD / X.size everywhere (into a handed buffer when it fits); X is read for its
    shape only."""
    if X_GRAD not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[OUT_GRAD]
    if dout.size != 1:
        raise ShapeError(f"op `mean_grad`: input `{OUT_GRAD}` must hold one value (Out is 0-D), got shape "
                         f"{fmt_shape(dout.shape)}")
    value = dout.item() / x.size if x.size else 0.0
    buf = ctx.buffer(X_GRAD, x.shape, x.dtype)
    if buf is None:
        return {X_GRAD: np.full(x.shape, value, dtype=x.dtype)}
    buf.fill(value)
    return {X_GRAD: buf}


register(
    "mean",
    inputs=["X"],
    outputs=["Out"],
    attrs={"rank1_result": False},
    infer=_mean_infer,
    kernel=_mean_kernel,
    grad=Gradient(_mean_grad_kernel, attrs=False, like={X_GRAD: "X"}, no_need_buffer=["X"], buffers=True),
    doc="Out = the mean of all elements of X (a 0-D tensor; shape [1] with rank1_result)",
)


