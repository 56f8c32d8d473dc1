"""``spectral_norm``: Weight divided by its largest singular value, estimated by power iteration.

Weight is seen as a matrix W [H, W'] with dim ``dim`` moved to the front (H = that dim, W' the
product of the others).  Starting from the inputs U [H] and V [W'], ``power_iters`` rounds of
``v = W^T u / (|W^T u| + eps)``, ``u = W v / (|W v| + eps)`` give ``sigma = u^T W v`` and
``Out = Weight / sigma`` (the reference's op; U and V are read, not updated).  The gradient treats
the iterated u and v as constants, as the reference: ``dW = dOut / sigma - (sum(dOut * W) /
sigma^2) u v^T``.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import register

DW, DOUT = grad_slot("Weight"), grad_slot("Out")


def _infer(ctx):
    shape = ctx.shape("Weight")
    dtype = check_float(ctx, "Weight")
    dim = ctx.attr("dim")
    if not 0 <= dim < len(shape) or len(shape) < 2:
        ctx.fail_attr("dim", f"an axis of the {len(shape)}-D Weight", dim)
    if ctx.attr("power_iters") < 0:
        ctx.fail_attr("power_iters", "an integer >= 0", ctx.attr("power_iters"))
    rows = shape[dim]
    cols = int(np.prod([d for i, d in enumerate(shape) if i != dim]))
    for slot, size in (("U", rows), ("V", cols)):
        got = ctx.shape(slot)
        if int(np.prod(got)) != size:
            ctx.fail(slot, f"{size} values for Weight {fmt_shape(shape)} with dim={dim}", f"shape {fmt_shape(got)}")
    ctx.set("Out", shape, dtype)


def _iterate(ins, attrs):
    w = ins["Weight"]
    dim = int(attrs["dim"])
    mat = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1).astype(np.float64)
    u = ins["U"].reshape(-1).astype(np.float64)
    v = ins["V"].reshape(-1).astype(np.float64)
    eps = float(attrs["eps"])
    for _ in range(int(attrs["power_iters"])):
        v = mat.T @ u
        v /= np.linalg.norm(v) + eps
        u = mat @ v
        u /= np.linalg.norm(u) + eps
    return mat, u, v, float(u @ mat @ v)


def _kernel(ins, attrs, ctx):
    _, _, _, sigma = _iterate(ins, attrs)
    w = ins["Weight"]
    return {"Out": (w / w.dtype.type(sigma)).astype(w.dtype)}


def _grad_kernel(ins, attrs, ctx):
    if DW not in ctx.wanted:
        return {}
    w, dout = ins["Weight"], ins[DOUT]
    dim = int(attrs["dim"])
    _, u, v, sigma = _iterate(ins, attrs)
    outer = np.outer(u, v).reshape((w.shape[dim],) + tuple(d for i, d in enumerate(w.shape) if i != dim))
    outer = np.moveaxis(outer, 0, dim)
    total = float(np.sum(dout.astype(np.float64) * w))
    return {DW: (dout / sigma - total / sigma ** 2 * outer).astype(w.dtype)}


register("spectral_norm", inputs=["Weight", "U", "V"], outputs=["Out"],
         attrs={"dim": 0, "power_iters": 1, "eps": 1e-12}, infer=_infer, kernel=_kernel,
         grad=Gradient(_grad_kernel, inputs=("Weight", "U", "V"), input_grads=("Weight",)),
         doc="Out = Weight / sigma, sigma = u^T W v after power_iters rounds of power iteration from U, V")
