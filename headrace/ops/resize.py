"""Padding and resizing ops: ``pad`` (constant, every dim), ``pad3d`` (5-D, constant / reflect /
replicate / circular over D, H, W), ``nearest_interp_v2`` (3-D, 4-D, 5-D), ``linear_interp_v2``
(3-D), ``bilinear_interp_v2`` (4-D), ``trilinear_interp_v2`` (5-D).

Gradients are the adjoints of the forward maps: a padded gradient is summed back onto the input
positions each output position was copied from (np.add.at over an index map padded the same way),
an interpolation's gradient is the transposed per-axis interpolation matrix applied to it.

Interpolation follows the reference kernels: ``ratio = (in - 1) / (out - 1)`` with
``align_corners`` (0 for out == 1), else ``1 / scale`` when a scale is given, else ``in / out``.
Nearest: ``src = int(ratio * k + 0.5)`` with align_corners, else ``int(ratio * k)``.  Bilinear,
(and linear, trilinear) per axis: with ``align_mode == 0`` and not align_corners (half-pixel) ``s = max(ratio (k + 0.5) -
0.5, 0)``, else ``s = ratio k``; ``lo = int(s)``, ``hi = min(lo + 1, in - 1)``, weight of hi ``s -
lo``.  The axes are interpolated one after the other (the same weights as the reference's
2^k-term formula, summed in another order).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import fmt_shape
from .gradrule import Gradient, grad_slot
from .registry import register

FLOATS = (float32, float64)
DX, DOUT = grad_slot("X"), grad_slot("Out")
NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


# --- shared padding helpers ------------------------------------------------------------------------
def _pad_array(x, widths, mode, value):
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=x.dtype.type(value))
    return np.pad(x, widths, mode=NUMPY_MODE[mode])


def _pad_adjoint(dout, in_shape, widths, mode):
    """The gradient of padding ``in_shape`` by ``widths`` in ``mode``: each output position's
    gradient is added to the input position it was copied from (constant fill: nowhere)."""
    if mode == "constant":
        region = tuple(slice(b, b + n) for (b, _), n in zip(widths, in_shape))
        return dout[region].copy()
    padded_axes = [a for a, w in enumerate(widths) if w != (0, 0)]
    if not padded_axes:
        return dout.copy()
    sizes = [in_shape[a] for a in padded_axes]
    index = np.arange(int(np.prod(sizes)), dtype=np.int64).reshape(sizes)
    index = np.pad(index, [widths[a] for a in padded_axes], mode=NUMPY_MODE[mode]).ravel()
    rest = [a for a in range(len(in_shape)) if a not in padded_axes]
    moved = np.transpose(dout, rest + padded_axes)
    lead = moved.shape[:len(rest)]
    flat = moved.reshape(lead + (-1,))
    grad = np.zeros(lead + (int(np.prod(sizes)),), dtype=dout.dtype)
    np.add.at(grad, (..., index), flat)
    grad = grad.reshape(lead + tuple(sizes))
    return np.transpose(grad, np.argsort(rest + padded_axes))


def _padded_shape(shape, widths):
    return tuple(-1 if n == -1 else n + b + a for n, (b, a) in zip(shape, widths))


# --- pad -------------------------------------------------------------------------------------------
def _pad_widths(attrs, rank):
    p = list(attrs["paddings"])
    return [(int(p[2 * i]), int(p[2 * i + 1])) for i in range(rank)]


def _pad_infer(ctx):
    shape = ctx.shape("X")
    ctx.check_dtype("X", FLOATS + (int32, int64))
    paddings = ctx.attr("paddings")
    if len(paddings) != 2 * len(shape) or any(p < 0 for p in paddings):
        ctx.fail_attr("paddings", f"{2 * len(shape)} values >= 0 (before, after per dim of X {fmt_shape(shape)})",
                      paddings)
    ctx.set("Out", _padded_shape(shape, _pad_widths({"paddings": paddings}, len(shape))), ctx.dtype("X"))


def _pad_kernel(ins, attrs, ctx):
    x = ins["X"]
    return {"Out": _pad_array(x, _pad_widths(attrs, x.ndim), "constant", attrs["pad_value"])}


def _pad_grad_kernel(ins, attrs, ctx):
    x, dout = ins["X"], ins[DOUT]
    return {DX: _pad_adjoint(dout, x.shape, _pad_widths(attrs, x.ndim), "constant")}


register("pad", inputs=["X"], outputs=["Out"], attrs={"paddings": [], "pad_value": 0.0},
         infer=_pad_infer, kernel=_pad_kernel,
         grad=Gradient(_pad_grad_kernel, inputs=("X",), no_need_buffer=("X",)),
         doc="Out = X padded with pad_value; paddings = [before_0, after_0, before_1, after_1, ...]")


# --- pad3d -----------------------------------------------------------------------------------------
def _pad3d_widths(attrs):
    """[left, right, top, bottom, front, back] -> per-axis widths of a 5-D tensor."""
    left, right, top, bottom, front, back = (int(v) for v in attrs["paddings"])
    spatial = [(front, back), (top, bottom), (left, right)]
    if attrs["data_format"] == "NCDHW":
        return [(0, 0), (0, 0)] + spatial
    return [(0, 0)] + spatial + [(0, 0)]


def _pad3d_infer(ctx):
    shape = ctx.check_rank("X", 5)
    ctx.check_dtype("X", FLOATS + (int32, int64))
    if ctx.attr("mode") not in NUMPY_MODE:
        ctx.fail_attr("mode", "'constant', 'reflect', 'replicate' or 'circular'", ctx.attr("mode"))
    if ctx.attr("data_format") not in ("NCDHW", "NDHWC"):
        ctx.fail_attr("data_format", "'NCDHW' or 'NDHWC'", ctx.attr("data_format"))
    paddings = ctx.attr("paddings")
    if len(paddings) != 6 or any(p < 0 for p in paddings):
        ctx.fail_attr("paddings", "6 values >= 0 [left, right, top, bottom, front, back]", paddings)
    widths = _pad3d_widths({"paddings": paddings, "data_format": ctx.attr("data_format")})
    if ctx.attr("mode") == "reflect":
        for n, (b, a) in zip(shape, widths):
            if n != -1 and (b >= n or a >= n) and (b or a):
                ctx.fail("X", f"a size > each reflect padding (paddings {paddings})", fmt_shape(shape))
    if ctx.attr("mode") == "circular":
        for n, (b, a) in zip(shape, widths):
            if n != -1 and (b > n or a > n):
                ctx.fail("X", f"a size >= each circular padding (paddings {paddings})", fmt_shape(shape))
    ctx.set("Out", _padded_shape(shape, widths), ctx.dtype("X"))


def _pad3d_kernel(ins, attrs, ctx):
    return {"Out": _pad_array(ins["X"], _pad3d_widths(attrs), attrs["mode"], attrs["value"])}


def _pad3d_grad_kernel(ins, attrs, ctx):
    return {DX: _pad_adjoint(ins[DOUT], ins["X"].shape, _pad3d_widths(attrs), attrs["mode"])}


register("pad3d", inputs=["X"], outputs=["Out"],
         attrs={"paddings": [0] * 6, "mode": "constant", "value": 0.0, "data_format": "NCDHW"},
         infer=_pad3d_infer, kernel=_pad3d_kernel,
         grad=Gradient(_pad3d_grad_kernel, inputs=("X",), no_need_buffer=("X",)),
         doc="Pad D, H, W of a 5-D tensor; paddings = [left, right, top, bottom, front, back]; mode constant "
             "(value) | reflect (mirror, edge not repeated) | replicate (edge) | circular (wrap)")


# --- interpolation ---------------------------------------------------------------------------------
def _spatial_axes(layout, rank):
    return tuple(range(2, rank)) if layout == "NCHW" else tuple(range(1, rank - 1))


def _out_size(in_size, out, scale):
    if out > 0:
        return out
    if in_size == -1:
        return -1
    return int(in_size * scale)


def _targets(attrs, rank):
    """(out sizes, scales) of the rank - 2 spatial axes: the last of [out_d, out_h, out_w]."""
    k = rank - 2
    outs = [attrs["out_d"], attrs["out_h"], attrs["out_w"]][3 - k:]
    scale = list(attrs["scale"] or [])
    if len(scale) == 1:
        scale = scale * k
    return outs, (scale if scale else [0.0] * k)


def _out_shape(shape, attrs):
    out = list(shape)
    outs, scales = _targets(attrs, len(shape))
    for axis, o, sc in zip(_spatial_axes(attrs["data_layout"], len(shape)), outs, scales):
        out[axis] = _out_size(shape[axis], o, sc)
    return out


def _interp_infer_for(ranks):
    def infer(ctx):
        shape = ctx.check_rank("X", ranks)
        ctx.check_dtype("X", FLOATS)
        attrs = {name: ctx.attr(name) for name in ("out_d", "out_h", "out_w", "scale", "data_layout")}
        if attrs["data_layout"] not in ("NCHW", "NHWC"):
            ctx.fail_attr("data_layout", "'NCHW' (channels first) or 'NHWC' (channels last)", attrs["data_layout"])
        outs, scales = _targets(attrs, len(shape))
        if len(scales) != len(outs) or any(o <= 0 and sc <= 0 for o, sc in zip(outs, scales)):
            ctx.fail_attr("out_w", f"{len(outs)} output sizes > 0, or scales > 0", [outs, attrs["scale"]])
        out_shape = _out_shape(shape, attrs)
        if 0 in out_shape:
            ctx.fail("X", f"spatial sizes giving output sizes > 0 with scale {attrs['scale']}", fmt_shape(shape))
        ctx.set("Out", tuple(out_shape), ctx.dtype("X"))
    return infer


def _axis_map(in_size, out_size, scale, attrs, nearest):
    """(lo, hi, weight of hi) of each output position along one axis."""
    align = attrs["align_corners"]
    if align:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale > 0 else in_size / out_size
    k = np.arange(out_size, dtype=np.float64)
    if nearest:
        lo = (ratio * k + 0.5).astype(np.int64) if align else (ratio * k).astype(np.int64)
        lo = np.minimum(lo, in_size - 1)
        return lo, lo, np.zeros(out_size)
    if attrs["align_mode"] == 0 and not align:
        src = np.maximum(ratio * (k + 0.5) - 0.5, 0.0)
    else:
        src = ratio * k
    lo = np.minimum(src.astype(np.int64), in_size - 1)
    hi = np.minimum(lo + 1, in_size - 1)
    return lo, hi, src - lo


def _maps(x_shape, out_shape, attrs, nearest):
    axes = _spatial_axes(attrs["data_layout"], len(x_shape))
    _, scales = _targets(attrs, len(x_shape))
    return [(axis, _axis_map(x_shape[axis], out_shape[axis], sc, attrs, nearest)) for axis, sc in zip(axes, scales)]


def _interp_kernel(nearest):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        out = x
        for axis, (lo, hi, w) in _maps(x.shape, _out_shape(x.shape, attrs), attrs, nearest):
            shape = [1] * x.ndim
            shape[axis] = -1
            w = w.astype(x.dtype).reshape(shape)
            a = np.take(out, lo, axis=axis)
            out = a if nearest else a + (np.take(out, hi, axis=axis) - a) * w
        return {"Out": np.ascontiguousarray(out)}
    return kernel


def _interp_grad_kernel(nearest):
    def kernel(ins, attrs, ctx):
        x_shape, dout = ins["X"].shape, ins[DOUT]
        grad = dout
        for axis, (lo, hi, w) in reversed(_maps(x_shape, dout.shape, attrs, nearest)):
            # the axis's interpolation matrix [out, in] (small), applied transposed: one matmul
            matrix = np.zeros((len(lo), x_shape[axis]), dtype=dout.dtype)
            rows = np.arange(len(lo))
            np.add.at(matrix, (rows, lo), (1 - w).astype(dout.dtype))
            np.add.at(matrix, (rows, hi), w.astype(dout.dtype))
            grad = np.moveaxis(np.moveaxis(grad, axis, -1) @ matrix, -1, axis)
        return {DX: np.ascontiguousarray(grad)}
    return kernel


for _name, _method, _ranks in (("nearest_interp_v2", "nearest", (3, 4, 5)), ("linear_interp_v2", "linear", 3),
                               ("bilinear_interp_v2", "bilinear", 4), ("trilinear_interp_v2", "trilinear", 5)):
    _nearest = _method == "nearest"
    register(_name, inputs=["X"], outputs=["Out"],
             attrs={"out_d": -1, "out_h": -1, "out_w": -1, "scale": [], "interp_method": _method,
                    "align_corners": True, "align_mode": 1, "data_layout": "NCHW"},
             infer=_interp_infer_for(_ranks), kernel=_interp_kernel(_nearest),
             grad=Gradient(_interp_grad_kernel(_nearest), inputs=("X",), no_need_buffer=("X",)),
             doc=f"{_method} resize of the spatial dims (W; H, W; D, H, W) to out_d/out_h/out_w or "
                 "int(size * scale); data_layout NCHW = channels first, NHWC = channels last; see the module "
                 "docstring for the source positions")
