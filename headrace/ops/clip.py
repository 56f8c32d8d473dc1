"""Ops for gradient clipping and weight decay: ``clip``, ``clip_by_norm``, ``squared_l2_norm``,
``sign``.

``clip``: ``Out = min(max(X, min), max)``; its gradient passes ``Out@GRAD`` where
``min < X < max`` (0 at and beyond the bounds, as the reference).  ``squared_l2_norm``: ``Out =
[sum(X * X)]`` (shape [1]; a float16 ``X`` is summed in float32 and gives a float32 ``Out``, so
global-norm clipping of float16 gradients does not overflow — the reference accumulates in float32
too but returns float16); gradient ``2 * X * Out@GRAD``.  ``clip_by_norm``: ``Out = X *
max_norm / ||X||`` when ``||X|| > max_norm``, else ``X`` (used on gradients only: no gradient).
``sign``: -1, 0 or 1 (no gradient: its derivative is 0 almost everywhere).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float16, float32, float64
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .registry import register

FLOATS = (float32, float64)
DX, DOUT = grad_slot("X"), grad_slot("Out")


def _same_as_x(ctx):
    ctx.set("Out", ctx.shape("X"), ctx.check_dtype("X", FLOATS))


# --- clip --------------------------------------------------------------------------------------
def _clip_infer(ctx):
    if ctx.attr("min") > ctx.attr("max"):
        ctx.fail_attr("min", f"a value <= max ({ctx.attr('max')})", ctx.attr("min"))
    _same_as_x(ctx)


def _clip_kernel(ins, attrs, ctx):
    x = ins["X"]
    t = x.dtype.type
    return {"Out": np.clip(x, t(attrs["min"]), t(attrs["max"]))}


def _clip_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    t = x.dtype.type
    inside = (x > t(attrs["min"])) & (x < t(attrs["max"]))
    return {DX: np.where(inside, dout, t(0))}


register("clip", inputs=["X"], outputs=["Out"], attrs={"min": -1.0, "max": 1.0},
         infer=_clip_infer, kernel=_clip_kernel, grad=Gradient(_clip_grad_kernel, like={DX: "X"}),
         doc="Out = min(max(X, min), max)")


# --- squared_l2_norm ---------------------------------------------------------------------------
def _sq_norm_infer(ctx):
    dtype = ctx.check_dtype("X", (float16,) + FLOATS)
    ctx.set("Out", (1,), float32 if dtype == float16 else dtype)


def _sq_norm_kernel(ins, attrs, ctx):
    x = ins["X"].reshape(-1)
    if x.dtype == np.float16:           # accumulated in float32: a float16 sum of squares overflows at 65504
        x = x.astype(np.float32)
    return {"Out": np.array([np.dot(x, x)], dtype=x.dtype)}


def _sq_norm_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x = ins["X"]
    return {DX: x * x.dtype.type(2 * ins[DOUT].reshape(-1)[0])}


register("squared_l2_norm", inputs=["X"], outputs=["Out"], infer=_sq_norm_infer,
         kernel=_sq_norm_kernel, grad=Gradient(_sq_norm_grad_kernel, like={DX: "X"}),
         doc="Out = [sum(X * X)], shape [1]")


# --- clip_by_norm ------------------------------------------------------------------------------
def _clip_by_norm_infer(ctx):
    if ctx.attr("max_norm") <= 0:
        ctx.fail_attr("max_norm", "a value > 0", ctx.attr("max_norm"))
    _same_as_x(ctx)


def _clip_by_norm_kernel(ins, attrs, ctx):
    x = ins["X"]
    norm = float(np.sqrt(np.vdot(x, x)))
    max_norm = float(attrs["max_norm"])
    if norm > max_norm:
        return {"Out": x * x.dtype.type(max_norm / norm)}
    return {"Out": x.copy()}


register("clip_by_norm", inputs=["X"], outputs=["Out"], attrs={"max_norm": 1.0},
         infer=_clip_by_norm_infer, kernel=_clip_by_norm_kernel, grad=NO_GRADIENT,
         doc="Out = X * max_norm / ||X|| if ||X|| > max_norm else X (L2 norm over the whole tensor)")


# --- sign --------------------------------------------------------------------------------------
register("sign", inputs=["X"], outputs=["Out"], infer=_same_as_x,
         kernel=lambda ins, attrs, ctx: {"Out": np.sign(ins["X"])}, grad=NO_GRADIENT,
         doc="Out = sign(X): -1, 0 or 1")
