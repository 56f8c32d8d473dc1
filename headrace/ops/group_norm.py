"""``group_norm``: normalize each sample over groups of channels (and all spatial positions).

X [N, C, *] (``data_layout`` NCHW; NHWC means channels last, any rank >= 2); C is split into
``groups`` groups; ``Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c]`` with the mean
and the biased variance of each (sample, group).  ``Mean`` and ``Variance`` [N, groups] are
outputs (the gradient reads them; float32 for a float16 X, as layer_norm's).  Scale and Bias
[C] are optional.  Instance normalization is the case ``groups == C``
(``nn.functional.instance_norm`` uses this op).

Gradient, with xhat the normalized input, rstd = 1 / sqrt(var + eps), g = dY * Scale and means
over a group: ``dX = rstd * (g - mean(g) - xhat * mean(g * xhat))``, ``dScale = sum(dY * xhat)``,
``dBias = sum(dY)`` over samples and positions.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from ..core.dtypes import float16, float32
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import optional, register
from .rowblocks import block_count, combine, for_blocks, row_dots, row_sums

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
    stat = float32 if dtype == float16 else dtype   # (as layer_norm: a float16 variance overflows at 65504)
    ctx.set("Mean", (shape[0], groups), stat)
    ctx.set("Variance", (shape[0], groups), stat)


def _grouped(x, attrs):
    """X as C-contiguous rows [N * groups, C / groups * positions] (channels first), and
    (N, groups, C / groups, positions)."""
    if attrs["data_layout"] == "NHWC":
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    g = attrs["groups"]
    positions = int(np.prod(x.shape[2:], dtype=np.int64))
    compute = np.float32 if x.dtype == np.float16 else x.dtype   # (float16 sums in float32)
    rows = np.ascontiguousarray(x.reshape(n * g, (c // g) * positions), dtype=compute)
    return rows, (n, g, c // g, positions)


def _ungroup(y, x_shape, attrs):
    if attrs["data_layout"] == "NHWC":
        moved = (x_shape[0], x_shape[-1]) + tuple(x_shape[1:-1])
        return np.ascontiguousarray(np.moveaxis(y.reshape(moved), 1, -1))
    return y.reshape(x_shape)


def _channel_rows(value, dims, start, stop):
    """[rows, C / groups, 1]: each row's (sample, group) channels of the per-channel ``value``."""
    _, g, cg, _ = dims
    return value.reshape(g, cg)[np.arange(start, stop) % g][:, :, None]


def _kernel(ins, attrs, ctx):
    """Per (sample, group) row, in blocks of whole samples on threads: y = x - mean, var =
    mean(y * y), y *= 1 / sqrt(var + eps), then Scale and Bias per channel (``rowblocks``'
    row sums, as layer_norm)."""
    x, scale, bias = ins["X"], ins.get("Scale"), ins.get("Bias")
    rows, dims = _grouped(x, attrs)
    compute = rows.dtype.type
    y = np.empty(rows.shape, compute)
    mean, var = np.empty(rows.shape[0], compute), np.empty(rows.shape[0], compute)
    eps, width = compute(attrs["epsilon"]), compute(rows.shape[1])   # (0: an empty group's mean is NaN)
    cg = dims[2]

    def block(index, start, stop):
        out, mu, sigma2 = y[start:stop], mean[start:stop], var[start:stop]
        np.divide(row_sums(rows[start:stop], out=mu), width, out=mu)
        np.subtract(rows[start:stop], mu[:, None], out=out)
        np.divide(row_dots(out, out, out=sigma2), width, out=sigma2)
        out *= (1 / np.sqrt(sigma2 + eps))[:, None]
        channels = out.reshape(stop - start, cg, -1)
        if scale is not None:
            channels *= _channel_rows(scale, dims, start, stop)
        if bias is not None:
            channels += _channel_rows(bias, dims, start, stop)
    for_blocks(block, *rows.shape, rowwise=True, align=dims[1])   # (row-wise: one block unless split)
    n, g = dims[:2]
    return {"Y": _ungroup(y.astype(x.dtype, copy=False), x.shape, attrs), "Mean": mean.reshape(n, g),
            "Variance": var.reshape(n, g)}


def _grad_kernel(ins, attrs, ctx):
    """Per row: xhat = (x - mean) * rstd, g = dY * Scale[c], dX = rstd * (g - mean(g) - xhat *
    mean(g * xhat)); Scale@GRAD and Bias@GRAD as per-block partial sums over positions and
    samples, added in block order."""
    x, scale = ins["X"], ins.get("Scale")
    rows, dims = _grouped(x, attrs)
    dy, _ = _grouped(ins[DY], attrs)
    n, g, cg, _ = dims
    compute = rows.dtype.type
    mean = ins["Mean"].reshape(-1).astype(compute, copy=False)
    rstd = 1 / np.sqrt(ins["Variance"].reshape(-1).astype(compute, copy=False) + compute(attrs["epsilon"]))
    dx = np.empty(rows.shape, compute) if DX in ctx.wanted else None
    sums = np.zeros((block_count(*rows.shape, align=g), 2, g, cg), compute)   # dY * xhat, dY per channel
    width = compute(rows.shape[1])

    def block(index, start, stop):
        b = stop - start
        xhat = np.subtract(rows[start:stop], mean[start:stop, None])
        xhat *= rstd[start:stop, None]
        d = dy[start:stop]
        if DSCALE in ctx.wanted:
            sums[index, 0] = np.add.reduce((d * xhat).reshape(b // g, g, cg, -1), axis=(0, 3))
        if DBIAS in ctx.wanted:
            sums[index, 1] = np.add.reduce(d.reshape(b // g, g, cg, -1), axis=(0, 3))
        if dx is None or not rows.shape[1]:   # (an empty group: no X@GRAD to compute)
            return
        if scale is not None:
            gy = (d.reshape(b, cg, -1) * _channel_rows(scale, dims, start, stop)).reshape(b, -1)
        else:
            gy = d.copy()
        mean_g = row_sums(gy) / width
        mean_gx = row_dots(gy, xhat) / width
        xhat *= mean_gx[:, None]
        gy -= mean_g[:, None]
        gy -= xhat
        np.multiply(gy, rstd[start:stop, None], out=dx[start:stop])
    for_blocks(block, *rows.shape, align=g)
    outs = {}
    if dx is not None:
        outs[DX] = _ungroup(dx.astype(x.dtype, copy=False), x.shape, attrs)
    for k, slot in ((0, DSCALE), (1, DBIAS)):
        if slot in ctx.wanted:
            outs[slot] = combine(sums[:, k]).reshape(-1).astype(ins["Scale" if k == 0 else "Bias"].dtype, copy=False)
    return outs


register("group_norm", inputs=["X", optional("Scale"), optional("Bias")], outputs=["Y", "Mean", "Variance"],
         attrs={"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"}, infer=_infer, kernel=_kernel,
         grad=Gradient(_grad_kernel, inputs=("X", "Scale", "Bias"), outputs=("Mean", "Variance"),
                       output_grads=("Y",), input_grads=("X", "Scale", "Bias"), no_need_buffer=("Bias",)),
         doc="Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, statistics per (sample, channel group)")
