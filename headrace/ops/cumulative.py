"""Cumulative ops besides ``cumsum`` (``manip.py``): ``cumprod``, ``cummax``/``cummin`` (values
and int64 indices), ``logcumsumexp`` and ``mode`` (the most frequent value, the smallest on ties, and
its last index, as the reference CPU kernel), along one axis.

Gradients: ``cumprod``'s is exact with zeros: ``dX_i = L_i * S_i`` with ``L`` the exclusive
running product and ``S_i = dOut_i + X_{i+1} S_{i+1}`` (no division); ``cummax``/``cummin`` send
each ``Out@GRAD`` to the element its index names (accumulating); ``logcumsumexp``'s is
``dX_i = sum_{j>=i} dOut_j exp(X_i - Out_j)`` (each factor <= 1).  Ties in cummax/cummin take the
latest index (the reference's ``>=`` scan).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import fmt_shape
from .gradrule import Gradient, grad_slot
from .indexing import along_axis_index
from .registry import register
from .shape import BadShape, axis_index, raise_bad_shape

DX, DOUT = grad_slot("X"), grad_slot("Out")
FLOATS = (float32, float64)


def _infer(allowed, indices=False, attr="axis"):
    def infer(ctx):
        shape = ctx.shape("X")
        dtype = ctx.check_dtype("X", allowed)
        try:
            axis_index(ctx.attr(attr), max(len(shape), 1), attr, shape)
        except BadShape as bad:
            raise_bad_shape(ctx, bad)
        ctx.set("Out", shape, dtype)
        if indices:
            ctx.set("Indices", shape, int64)
    return infer


def _last(x, axis):
    return np.moveaxis(x, axis, -1)


# --- cumprod ---------------------------------------------------------------------------------------
def _cumprod_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    if x.ndim == 0:
        return {DX: dout.copy()}
    axis = attrs["dim"] % x.ndim
    xs, ds = _last(x, axis), _last(dout, axis)
    ones = np.ones(xs.shape[:-1] + (1,), dtype=x.dtype)
    left = np.concatenate([ones, np.cumprod(xs, axis=-1)[..., :-1]], axis=-1)
    s = np.empty_like(ds)
    s[..., -1] = ds[..., -1]
    for i in range(xs.shape[-1] - 2, -1, -1):
        s[..., i] = ds[..., i] + xs[..., i + 1] * s[..., i + 1]
    return {DX: np.ascontiguousarray(np.moveaxis(left * s, -1, axis))}


register("cumprod", inputs=["X"], outputs=["Out"], attrs={"dim": -1},
         infer=_infer(FLOATS + (int32, int64), attr="dim"),
         kernel=lambda ins, attrs, ctx: {"Out": np.cumprod(ins["X"], axis=attrs["dim"] % max(ins["X"].ndim, 1))
                                         if ins["X"].ndim else ins["X"].copy()},
         grad=Gradient(_cumprod_grad_kernel, inputs=("X",)),
         doc="Out = the running product of X along `dim`")


# --- cummax / cummin -------------------------------------------------------------------------------
def _scan_kernel(better):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        if x.ndim == 0:
            return {"Out": x.copy(), "Indices": np.zeros((), np.int64)}
        axis = attrs["axis"] % x.ndim
        xs = _last(x, axis)
        out, idx = np.empty_like(xs), np.empty(xs.shape, np.int64)
        out[..., 0], idx[..., 0] = xs[..., 0], 0
        for i in range(1, xs.shape[-1]):
            take = better(xs[..., i], out[..., i - 1]) | np.isnan(xs[..., i])
            out[..., i] = np.where(take, xs[..., i], out[..., i - 1])
            idx[..., i] = np.where(take, i, idx[..., i - 1])
        return {"Out": np.ascontiguousarray(np.moveaxis(out, -1, axis)),
                "Indices": np.ascontiguousarray(np.moveaxis(idx, -1, axis))}
    return kernel


def _scan_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, idx, dout = ins["X"], ins["Indices"], ins[DOUT]
    if idx.shape != dout.shape:
        raise ValueError(f"op `cummax_grad`/`cummin_grad`: Indices {fmt_shape(idx.shape)} and Out@GRAD "
                         f"{fmt_shape(dout.shape)} differ")
    if x.ndim == 0:
        return {DX: dout.copy()}
    dx = np.zeros(x.shape, dtype=x.dtype)
    np.add.at(dx, along_axis_index(idx, attrs["axis"] % x.ndim), dout)
    return {DX: dx}


for _type, _better in (("cummax", np.greater_equal), ("cummin", np.less_equal)):
    register(_type, inputs=["X"], outputs=["Out", "Indices"], attrs={"axis": -1},
             infer=_infer(FLOATS + (int32, int64), indices=True), kernel=_scan_kernel(_better),
             grad=Gradient(_scan_grad_kernel, inputs=("X",), outputs=("Indices",), no_need_buffer=["X"]),
             doc=f"Out = the running {'maximum' if _type == 'cummax' else 'minimum'} along `axis`, Indices = "
                 "where it was (the latest on ties)")


# --- logcumsumexp ----------------------------------------------------------------------------------
def _logcumsumexp_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, out, dout = ins["X"], ins["Out"], ins[DOUT]
    if x.ndim == 0:
        return {DX: dout.copy()}
    axis = attrs["axis"] % x.ndim
    xs, os_, ds = _last(x, axis), _last(out, axis), _last(dout, axis)
    n = xs.shape[-1]
    later = np.triu(np.ones((n, n), dtype=bool))            # [i, j]: j >= i
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.where(later, np.exp(xs[..., :, None] - os_[..., None, :]), 0.0)
    dx = np.sum(weights * ds[..., None, :], axis=-1)
    return {DX: np.ascontiguousarray(np.moveaxis(dx, -1, axis)).astype(x.dtype, copy=False)}


register("logcumsumexp", inputs=["X"], outputs=["Out"], attrs={"axis": -1}, infer=_infer(FLOATS),
         kernel=lambda ins, attrs, ctx: {"Out": np.logaddexp.accumulate(ins["X"], axis=attrs["axis"] % ins["X"].ndim)
                                         if ins["X"].ndim else ins["X"].copy()},
         grad=Gradient(_logcumsumexp_grad_kernel, inputs=("X",), outputs=("Out",)),
         doc="Out = log(cumsum(exp(X))) along `axis`, computed without overflow")


# --- mode ------------------------------------------------------------------------------------------
def _mode_infer(ctx):
    shape = ctx.shape("X")
    dtype = ctx.check_dtype("X", FLOATS + (int32, int64))
    try:
        axis = axis_index(ctx.attr("axis"), max(len(shape), 1), "axis", shape)
    except BadShape as bad:
        raise_bad_shape(ctx, bad)
    out = [1 if i == axis else d for i, d in enumerate(shape)] if ctx.attr("keepdim") else \
        [d for i, d in enumerate(shape) if i != axis]
    ctx.set("Out", out, dtype)
    ctx.set("Indices", out, int64)


def _row_mode(row):
    """(the most frequent value — the smallest on ties, NaN counted last — and its last index)."""
    values, counts = np.unique(row, return_counts=True)
    value = values[int(np.argmax(counts))]
    hits = np.isnan(row) if isinstance(value, float) and np.isnan(value) else row == value
    return value, int(np.nonzero(hits)[0][-1])


def _mode_kernel(ins, attrs, ctx):
    x = ins["X"]
    if x.ndim == 0:
        return {"Out": x.copy(), "Indices": np.zeros((), np.int64)}
    axis = attrs["axis"] % x.ndim
    rows = np.moveaxis(x, axis, -1)
    out, idx = np.empty(rows.shape[:-1], x.dtype), np.empty(rows.shape[:-1], np.int64)
    for k in np.ndindex(*rows.shape[:-1]):
        out[k], idx[k] = _row_mode(rows[k])
    if attrs["keepdim"]:
        out, idx = np.expand_dims(out, axis), np.expand_dims(idx, axis)
    return {"Out": out, "Indices": idx}


def _mode_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, idx, dout = ins["X"], ins["Indices"], ins[DOUT]
    if x.ndim == 0:
        return {DX: dout.copy()}
    axis = attrs["axis"] % x.ndim
    if not attrs["keepdim"]:
        idx, dout = np.expand_dims(idx, axis), np.expand_dims(dout, axis)
    dx = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(dx, idx, dout, axis)
    return {DX: dx}


register("mode", inputs=["X"], outputs=["Out", "Indices"], attrs={"axis": -1, "keepdim": False},
         infer=_mode_infer, kernel=_mode_kernel,
         grad=Gradient(_mode_grad_kernel, inputs=("X",), outputs=("Indices",), no_need_buffer=["X"]),
         doc="Out = the most frequent value along `axis` (the smallest on ties), Indices = its last position; "
             "the gradient goes to that position (the reference's convention)")
