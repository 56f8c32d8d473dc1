"""``group_norm``: normalize each sample over groups of channels (and all spatial positions).

X [N, C, *] (``data_layout`` NCHW; NHWC means channels last, any rank >= 2); C is split into
``groups`` groups; ``Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c]`` with the mean
and the biased variance of each (sample, group).  ``Mean`` and ``Variance`` [N, groups] are
outputs (the gradient reads them).  Scale and Bias [C] are optional.  Instance normalization is
the case ``groups == C`` (``nn.functional.instance_norm`` uses this op).

Gradient, with xhat the normalized input, rstd = 1 / sqrt(var + eps), g = dY * Scale and means
over a group: ``dX = rstd * (g - mean(g) - xhat * mean(g * xhat))``, ``dScale = sum(dY * xhat)``,
``dBias = sum(dY)`` over samples and positions.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import optional, register

DX, DSCALE, DBIAS, DY = grad_slot("X"), grad_slot("Scale"), grad_slot("Bias"), grad_slot("Y")


def _infer(ctx):
    shape = ctx.shape("X")
    dtype = check_float(ctx, "X")
    if len(shape) < 2:
        ctx.fail("X", "rank >= 2 ([N, C, ...])", f"shape {fmt_shape(shape)}")
    if ctx.attr("data_layout") not in ("NCHW", "NHWC"):
        ctx.fail_attr("data_layout", "'NCHW' or 'NHWC'", ctx.attr("data_layout"))
    channels = shape[-1] if ctx.attr("data_layout") == "NHWC" else shape[1]
    groups = ctx.attr("groups")
    if not isinstance(groups, int) or groups < 1 or (channels >= 0 and channels % groups):
        ctx.fail_attr("groups", f"a positive divisor of the channel count ({channels})", groups)
    for slot in ("Scale", "Bias"):
        if ctx.has(slot):
            ctx.check_same_dtype("X", slot)
            got = ctx.shape(slot)
            if len(got) != 1 or (channels >= 0 and got[0] >= 0 and got[0] != channels):
                ctx.fail(slot, f"shape [{channels}] (one value per channel)", f"shape {fmt_shape(got)}")
    ctx.set("Y", shape, dtype)
    ctx.set("Mean", (shape[0], groups), dtype)
    ctx.set("Variance", (shape[0], groups), dtype)


def _grouped(x, attrs):
    """X as [N, groups, C / groups, positions] (channels first)."""
    if attrs["data_layout"] == "NHWC":
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    return x.reshape(n, attrs["groups"], c // attrs["groups"], -1)


def _per_channel(value, grouped_shape):
    _, g, cg, _ = grouped_shape
    return value.reshape(1, g, cg, 1)


def _ungroup(y, x_shape, attrs):
    if attrs["data_layout"] == "NHWC":
        moved = (x_shape[0], x_shape[-1]) + tuple(x_shape[1:-1])
        return np.ascontiguousarray(np.moveaxis(y.reshape(moved), 1, -1))
    return y.reshape(x_shape)


def _kernel(ins, attrs, ctx):
    x = ins["X"]
    xg = _grouped(x, attrs)
    mean = xg.mean(axis=(2, 3), keepdims=True)
    var = np.square(xg - mean).mean(axis=(2, 3), keepdims=True)
    y = (xg - mean) / np.sqrt(var + x.dtype.type(attrs["epsilon"]))
    if "Scale" in ins:
        y = y * _per_channel(ins["Scale"], xg.shape)
    if "Bias" in ins:
        y = y + _per_channel(ins["Bias"], xg.shape)
    n, g = xg.shape[:2]
    return {"Y": _ungroup(y.astype(x.dtype), x.shape, attrs), "Mean": mean.reshape(n, g).astype(x.dtype),
            "Variance": var.reshape(n, g).astype(x.dtype)}


def _grad_kernel(ins, attrs, ctx):
    x = ins["X"]
    xg = _grouped(x, attrs)
    dy = _grouped(ins[DY], attrs)
    n, g = xg.shape[:2]
    mean = ins["Mean"].reshape(n, g, 1, 1)
    rstd = 1 / np.sqrt(ins["Variance"].reshape(n, g, 1, 1) + x.dtype.type(attrs["epsilon"]))
    xhat = (xg - mean) * rstd
    outs = {}
    if DX in ctx.wanted:
        gy = dy * _per_channel(ins["Scale"], xg.shape) if "Scale" in ins else dy
        dx = rstd * (gy - gy.mean(axis=(2, 3), keepdims=True)
                     - xhat * (gy * xhat).mean(axis=(2, 3), keepdims=True))
        outs[DX] = _ungroup(dx.astype(x.dtype), x.shape, attrs)
    if DSCALE in ctx.wanted:
        outs[DSCALE] = (dy * xhat).sum(axis=(0, 3)).reshape(-1).astype(x.dtype)
    if DBIAS in ctx.wanted:
        outs[DBIAS] = dy.sum(axis=(0, 3)).reshape(-1).astype(x.dtype)
    return outs


register("group_norm", inputs=["X", optional("Scale"), optional("Bias")], outputs=["Y", "Mean", "Variance"],
         attrs={"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"}, infer=_infer, kernel=_kernel,
         grad=Gradient(_grad_kernel, inputs=("X", "Scale", "Bias"), outputs=("Mean", "Variance"),
                       output_grads=("Y",), input_grads=("X", "Scale", "Bias"), no_need_buffer=("Bias",)),
         doc="Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, statistics per (sample, channel group)")
