"""``pool3d``: max or average pooling over D, H and W of [N, C, D, H, W] (or NDHWC).

Windows as ``pool2d``'s: explicit ``paddings`` (3 symmetric values or 6 before/after), 'SAME' /
'VALID', ``ceil_mode``, windows clipped to the input, ``exclusive`` (average over the cells
inside the input) or the full kd * kh * kw divisor, ``adaptive`` bins [floor(i n / o), ceil((i + 1)
n / o)) with ``ksize`` the output size, ``global_pooling``.  Gradients: max pooling sends each
output's gradient to the first maximum of its window (row-major), average pooling spreads it
over the window's cells divided by the divisor; overlapping windows add up.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import int32
from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import REQUIRED, register

DX, DOUT = grad_slot("X"), grad_slot("Out")


def _axis(size, attrs, i):
    """(start [O], end [O], k) of the windows along spatial axis ``i``."""
    k, s = int(attrs["ksize"][i]), int(attrs["strides"][i])
    if attrs["global_pooling"]:
        return np.array([0]), np.array([size]), size
    if attrs["adaptive"]:
        o = np.arange(k)
        return (o * size) // k, -((-(o + 1) * size) // k), k
    p = [int(v) for v in attrs["paddings"]]
    pads = [v for v in p for _ in range(2)] if len(p) == 3 else p
    before, after = pads[2 * i], pads[2 * i + 1]
    if attrs["padding_algorithm"] == "VALID":
        before = after = 0
    elif attrs["padding_algorithm"] == "SAME":
        total = max((-(-size // s) - 1) * s + k - size, 0)
        before, after = total // 2, total - total // 2
    out = (size + before + after - k + (s - 1 if attrs["ceil_mode"] else 0)) // s + 1
    start = np.arange(max(out, 0)) * s - before
    return np.maximum(start, 0), np.minimum(start + k, size), k


def _infer(ctx):
    shape = ctx.check_rank("X", 5)
    dtype = check_float(ctx, "X")
    if ctx.attr("pooling_type") not in ("max", "avg"):
        ctx.fail_attr("pooling_type", "'max' or 'avg'", ctx.attr("pooling_type"))
    if ctx.attr("data_format") not in ("NCDHW", "NDHWC"):
        ctx.fail_attr("data_format", "'NCDHW' or 'NDHWC'", ctx.attr("data_format"))
    for name, counts in (("ksize", (3,)), ("strides", (3,)), ("paddings", (3, 6))):
        if len(ctx.attr(name)) not in counts:
            ctx.fail_attr(name, f"{' or '.join(map(str, counts))} integers", ctx.attr(name))
    last = ctx.attr("data_format") == "NDHWC"
    sizes = list(shape[1:4]) if last else list(shape[2:])
    out = [-1 if n < 0 else len(_axis(n, ctx.attrs, i)[0]) for i, n in enumerate(sizes)]
    if 0 in out:
        ctx.fail("X", "an input large enough for the window", f"shape {fmt_shape(shape)}")
    c = shape[4] if last else shape[1]
    ctx.set("Out", (shape[0], *out, c) if last else (shape[0], c, *out), dtype)


def _windows(x, attrs):
    """Per-cell flat input indices [OD, OH, OW, K], validity [.., K], divisor [OD, OH, OW]."""
    d, h, w = x.shape[2:]
    axes, kprod = [], 1
    for i, size in enumerate((d, h, w)):
        start, end, k = _axis(size, attrs, i)
        kmax = max(int((end - start).max(initial=1)), 1)
        cells = start[:, None] + np.arange(kmax)
        ok = cells < end[:, None]
        axes.append((np.where(ok, cells, 0), ok, end - start))
        kprod *= k
    (cd, okd, nd), (ch, okh, nh), (cw, okw, nw) = axes
    index = (cd[:, None, None, :, None, None] * h + ch[None, :, None, None, :, None]) * w \
        + cw[None, None, :, None, None, :]
    valid = okd[:, None, None, :, None, None] & okh[None, :, None, None, :, None] & okw[None, None, :, None, None, :]
    shape = index.shape[:3] + (-1,)
    counts = nd[:, None, None] * nh[None, :, None] * nw[None, None, :]
    divisor = counts if (attrs["exclusive"] or attrs["adaptive"]) else np.full(counts.shape, kprod)
    return index.reshape(shape), valid.reshape(shape), np.maximum(divisor, 1)


def _prepare(ins, attrs):
    last = attrs["data_format"] == "NDHWC"
    x = np.moveaxis(ins["X"], -1, 1) if last else ins["X"]
    index, valid, divisor = _windows(x, attrs)
    n, c = x.shape[:2]
    cells = x.reshape(n, c, -1)[:, :, index]                       # [N, C, OD, OH, OW, K]
    return x, last, index, valid, divisor, cells


def _kernel(ins, attrs, ctx):
    x, last, index, valid, divisor, cells = _prepare(ins, attrs)
    if attrs["pooling_type"] == "max":
        out = np.where(valid, cells, np.array(-np.inf, x.dtype)).max(axis=-1)
    else:
        out = np.where(valid, cells, np.array(0, x.dtype)).sum(axis=-1) / divisor.astype(x.dtype)
    out = out.astype(x.dtype)
    return {"Out": np.ascontiguousarray(np.moveaxis(out, 1, -1) if last else out)}


def _grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, last, index, valid, divisor, cells = _prepare(ins, attrs)
    dout = np.moveaxis(ins[DOUT], -1, 1) if last else ins[DOUT]
    n, c = x.shape[:2]
    if attrs["pooling_type"] == "max":
        best = np.where(valid, cells, -np.inf).argmax(axis=-1)[..., None]
        weights = np.zeros(cells.shape)
        # a window whose maximum is NaN: Out is NaN, which no cell equals (pool2d's and the reference's rule)
        np.put_along_axis(weights, best, np.where(np.isnan(np.take_along_axis(cells, best, axis=-1)), 0.0, 1.0),
                          axis=-1)
    else:
        weights = np.broadcast_to(valid / divisor[..., None], cells.shape)
    spread = weights * dout[..., None]
    if not np.isfinite(dout).all():   # 0 * inf or 0 * NaN: cells a gradient does not reach stay 0
        spread[weights == 0] = 0
    plane = int(np.prod(x.shape[2:]))
    offsets = (np.arange(n * c) * plane).reshape(n, c, 1, 1, 1, 1)
    flat = np.bincount((index + offsets).ravel(), weights=spread.ravel(), minlength=n * c * plane)
    dx = flat.reshape(x.shape).astype(x.dtype)
    return {DX: np.ascontiguousarray(np.moveaxis(dx, 1, -1) if last else dx)}


register("pool3d", inputs=["X"], outputs=["Out"],
         attrs={"pooling_type": "max", "ksize": REQUIRED, "strides": [1, 1, 1], "paddings": [0, 0, 0],
                "global_pooling": False, "exclusive": True, "ceil_mode": False, "adaptive": False,
                "data_format": "NCDHW", "padding_algorithm": "EXPLICIT", "use_cudnn": False},
         infer=_infer, kernel=_kernel, grad=Gradient(_grad_kernel, inputs=("X",)),
         doc="max or average pooling over the last three dims of NCDHW (or D, H, W of NDHWC)")


# --- max_pool3d_with_index -------------------------------------------------------------------------
def _with_index_infer(ctx):
    _infer(ctx)
    ctx.set("Mask", ctx.outs["Out"][0][0], int32)


def _with_index_kernel(ins, attrs, ctx):
    attrs = dict(attrs, pooling_type="max", data_format="NCDHW", padding_algorithm="EXPLICIT", exclusive=True)
    x, _, index, valid, _, cells = _prepare(ins, attrs)
    best = np.where(valid, cells, np.array(-np.inf, x.dtype)).argmax(axis=-1)[..., None]
    out = np.take_along_axis(cells, best, -1)[..., 0]
    mask = np.take_along_axis(np.broadcast_to(index, cells.shape), best, -1)[..., 0]
    return {"Out": np.ascontiguousarray(out, dtype=x.dtype), "Mask": mask.astype(np.int32)}


def _with_index_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, mask, dout = ins["X"], ins["Mask"].astype(np.int64), ins[DOUT]
    n, c = x.shape[:2]
    plane = int(np.prod(x.shape[2:]))
    offsets = (np.arange(n * c) * plane).reshape(n, c, 1, 1, 1)
    flat = np.bincount((mask + offsets).ravel(), weights=dout.ravel().astype(np.float64), minlength=n * c * plane)
    return {DX: flat.reshape(x.shape).astype(dout.dtype)}


register("max_pool3d_with_index", inputs=["X"], outputs=["Out", "Mask"],
         attrs={"ksize": REQUIRED, "strides": [1, 1, 1], "paddings": [0, 0, 0], "global_pooling": False,
                "adaptive": False, "ceil_mode": False, "pooling_type": "max", "data_format": "NCDHW",
                "padding_algorithm": "EXPLICIT", "exclusive": True},
         infer=_with_index_infer, kernel=_with_index_kernel,
         grad=Gradient(_with_index_grad_kernel, inputs=("X",), outputs=("Mask",), no_need_buffer=("X",)),
         doc="Out = window maxima over D, H, W; Mask = the flat (d * H * W + h * W + w) index of each maximum")
