"""Convolution and pooling over images: ``conv2d``, ``depthwise_conv2d``, ``pool2d``.

Geometry follows the reference system:

- ``paddings`` is ``[pad_h, pad_w]`` (symmetric) or ``[top, bottom, left, right]``;
- ``padding_algorithm="SAME"`` pads so that ``out = ceil(in / stride)`` (splitting the total pad
  as ``pad // 2`` before, the rest after, and resetting dilation to 1); ``"VALID"`` pads nothing;
- output size ``(in + pad_before + pad_after - (dilation * (k - 1) + 1)) // stride + 1``; pooling
  with ``ceil_mode`` adds ``stride - 1`` to the numerator.

One geometry function per op family is shared by ``infer`` (dims may be -1) and the kernel, so
the two cannot disagree.  Kernels work in NCHW (NHWC is transposed in and out): convolution builds
an im2col view with ``sliding_window_view`` and runs one batched matmul over groups; pooling
gathers each output's window with index arrays and a validity mask (which also covers adaptive
bins, ``ceil_mode`` overhang and the ``exclusive`` divisor).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core.errors import fmt_shape
from .elementwise import check_float
from .registry import REQUIRED, register

_FORMATS = ("NCHW", "NHWC", "AnyLayout")
_ALGORITHMS = ("EXPLICIT", "SAME", "VALID")


# --- shared geometry ---------------------------------------------------------------------------
def _four_pads(paddings) -> tuple:
    """[pad_h, pad_w] or [top, bottom, left, right] as (top, bottom, left, right)."""
    p = [int(v) for v in paddings]
    return (p[0], p[0], p[1], p[1]) if len(p) == 2 else tuple(p)


def _resolve_padding(pads, algorithm, in_hw, ksize, strides, dilations):
    """(pads, dilations) after ``padding_algorithm``; an unknown (-1) input dim gets zero pads."""
    if algorithm == "VALID":
        return (0, 0, 0, 0), tuple(dilations)
    if algorithm != "SAME":
        return tuple(pads), tuple(dilations)
    out = []
    for size, k, s in zip(in_hw, ksize, strides):
        if size < 0:
            out += [0, 0]
            continue
        total = max((-(-size // s) - 1) * s + k - size, 0)
        out += [total // 2, total - total // 2]
    return tuple(out), (1, 1)


def _out_size(size, k_eff, pad_sum, stride, ceil_mode=False) -> int:
    if size < 0 or k_eff < 0:
        return -1
    extra = stride - 1 if ceil_mode else 0
    return max((size + pad_sum - k_eff + extra) // stride + 1, 0)  # 0, never -1 (unknown): too small


def _spatial(shape, channels_last):
    """(N, C, H, W) of an NCHW or NHWC shape."""
    if channels_last:
        return shape[0], shape[3], shape[1], shape[2]
    return tuple(shape)


def _check_ints(ctx, name, count, minimum):
    value = ctx.attr(name)
    counts = (count,) if isinstance(count, int) else count
    if not isinstance(value, (list, tuple)) or len(value) not in counts \
            or any(int(v) != v or int(v) < minimum for v in value):
        want = " or ".join(str(c) for c in counts)
        ctx.fail_attr(name, f"a list of {want} integers >= {minimum}", value)
    return [int(v) for v in value]


def _check_choice(ctx, name, choices):
    value = ctx.attr(name)
    if value not in choices:
        ctx.fail_attr(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def _check_common(ctx, slot):
    """Validated rank, dtype, strides, paddings, layout and algorithm shared by conv and pool."""
    shape = ctx.check_rank(slot, 4)
    dtype = check_float(ctx, slot)
    _check_ints(ctx, "strides", 2, 1)
    _check_ints(ctx, "paddings", (2, 4), 0)
    _check_choice(ctx, "padding_algorithm", _ALGORITHMS)
    channels_last = _check_choice(ctx, "data_format", _FORMATS) == "NHWC"
    return shape, dtype, channels_last


def _fail_output_size(ctx, slot, shape, out_hw, detail):
    if 0 in out_hw:
        ctx.fail(slot, f"an input large enough for {detail}",
                 f"shape {fmt_shape(shape)}, which gives output size {list(out_hw)}")


# --- conv2d / depthwise_conv2d -----------------------------------------------------------------
def _conv_geometry(attrs, in_hw, k_hw):
    """(pads, dilations, output [H, W]) of a convolution; dims may be -1."""
    pads, dilations = _resolve_padding(_four_pads(attrs["paddings"]), attrs["padding_algorithm"],
                                       in_hw, k_hw, attrs["strides"], attrs["dilations"])
    out_hw = tuple(
        _out_size(in_hw[i], d * (k - 1) + 1 if k >= 0 else -1, pads[2 * i] + pads[2 * i + 1],
                  int(attrs["strides"][i]))
        for i, (k, d) in enumerate(zip(k_hw, dilations)))
    return pads, dilations, out_hw


def _make_conv_infer(depthwise: bool):
    def infer(ctx):
        x_shape, dtype, channels_last = _check_common(ctx, "Input")
        w_shape = ctx.check_rank("Filter", 4)
        ctx.check_same_dtype("Input", "Filter")
        _check_ints(ctx, "dilations", 2, 1)
        groups = int(ctx.attr("groups"))
        if groups < 1:
            ctx.fail_attr("groups", "an integer >= 1", groups)
        n, c, h, w = _spatial(x_shape, channels_last)
        m, c_per_group, kh, kw = w_shape
        if depthwise and c >= 0 and groups != c:
            ctx.fail_attr("groups", f"the number of input channels ({c}) for a depthwise convolution", groups)
        if c >= 0 and c % groups:
            ctx.fail("Input", f"a channel count divisible by groups={groups}", f"{c} channels")
        if c >= 0 and c_per_group >= 0 and c != c_per_group * groups:
            ctx.fail("Filter", f"dim 1 = input channels / groups = {c} / {groups}",
                     f"shape {fmt_shape(w_shape)} (input shape {fmt_shape(x_shape)})")
        if m >= 0 and m % groups:
            ctx.fail("Filter", f"dim 0 (output channels) divisible by groups={groups}", f"shape {fmt_shape(w_shape)}")
        _, _, out_hw = _conv_geometry(ctx.attrs, (h, w), (kh, kw))
        _fail_output_size(ctx, "Input", x_shape, out_hw, f"filter {kh}x{kw} with these strides/paddings/dilations")
        out = (n, out_hw[0], out_hw[1], m) if channels_last else (n, m, out_hw[0], out_hw[1])
        ctx.set("Output", out, dtype)
    return infer


def _windows(x, ksize, strides, pads, dilations, fill=0):
    """im2col view of NCHW ``x``: [N, C, OH, OW, kh, kw] (no copy beyond the padding)."""
    top, bottom, left, right = pads
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    (kh, kw), (dh, dw), (sh, sw) = ksize, dilations, strides
    view = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return view[:, :, ::sh, ::sw, ::dh, ::dw]


def _conv_nchw(x, w, strides, pads, dilations, groups):
    n = x.shape[0]
    m, cg, kh, kw = w.shape
    g = groups
    win = _windows(x, (kh, kw), strides, pads, dilations)
    oh, ow = win.shape[2], win.shape[3]
    # [g, N*OH*OW, C/g*kh*kw] @ [g, C/g*kh*kw, M/g] -> [g, N*OH*OW, M/g]
    cols = win.reshape(n, g, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6).reshape(g, n * oh * ow, cg * kh * kw)
    filters = w.reshape(g, m // g, cg * kh * kw).transpose(0, 2, 1)
    out = np.matmul(cols, filters)
    return out.reshape(g, n, oh, ow, m // g).transpose(1, 0, 4, 2, 3).reshape(n, m, oh, ow)


def _conv_kernel(ins, attrs):
    x, w = ins["Input"], ins["Filter"]
    channels_last = attrs["data_format"] == "NHWC"
    if channels_last:
        x = x.transpose(0, 3, 1, 2)
    pads, dilations, _ = _conv_geometry(attrs, x.shape[2:], w.shape[2:])
    out = _conv_nchw(x, w, [int(s) for s in attrs["strides"]], pads, dilations, int(attrs["groups"]))
    if channels_last:
        out = out.transpose(0, 2, 3, 1)
    return {"Output": np.ascontiguousarray(out, dtype=ins["Input"].dtype)}


_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
               "groups": 1, "data_format": "NCHW", "use_cudnn": True, "use_mkldnn": False}

register(
    "conv2d",
    inputs=["Input", "Filter"],
    outputs=["Output"],
    attrs=dict(_CONV_ATTRS),
    infer=_make_conv_infer(depthwise=False),
    kernel=_conv_kernel,
    doc="Output = 2-D (grouped) cross-correlation of Input [N, C, H, W] with Filter [M, C/groups, kh, kw]",
)

register(
    "depthwise_conv2d",
    inputs=["Input", "Filter"],
    outputs=["Output"],
    attrs=dict(_CONV_ATTRS),
    infer=_make_conv_infer(depthwise=True),
    kernel=_conv_kernel,
    doc="conv2d with groups == C: each input channel has its own M/C filters",
)


# --- pool2d ------------------------------------------------------------------------------------
def _pool_geometry(attrs, in_hw):
    """(ksize, strides, pads, output [H, W]) of a pooling; dims may be -1."""
    ksize = [int(k) for k in attrs["ksize"]]
    strides = [int(s) for s in attrs["strides"]]
    if attrs["global_pooling"]:
        ksize = list(in_hw)
        pads = (0, 0, 0, 0)
        if not attrs["adaptive"]:
            return ksize, strides, pads, (1, 1)
    if attrs["adaptive"]:
        return ksize, strides, (0, 0, 0, 0), tuple(ksize)
    pads, _ = _resolve_padding(_four_pads(attrs["paddings"]), attrs["padding_algorithm"],
                               in_hw, ksize, strides, (1, 1))
    out_hw = tuple(_out_size(in_hw[i], ksize[i], pads[2 * i] + pads[2 * i + 1], strides[i], attrs["ceil_mode"])
                   for i in range(2))
    return ksize, strides, pads, out_hw


def _pool_infer(ctx):
    x_shape, dtype, channels_last = _check_common(ctx, "X")
    _check_choice(ctx, "pooling_type", ("max", "avg"))
    ksize = _check_ints(ctx, "ksize", 2, 1)
    n, c, h, w = _spatial(x_shape, channels_last)
    _, _, _, out_hw = _pool_geometry(ctx.attrs, (h, w))
    _fail_output_size(ctx, "X", x_shape, out_hw, f"ksize {ksize} with these strides/paddings")
    out = (n, out_hw[0], out_hw[1], c) if channels_last else (n, c, out_hw[0], out_hw[1])
    ctx.set("Out", out, dtype)


def _pool_index(size, out, k, stride, pad_before, adaptive):
    """Window cells of each output position along one axis.

    Returns (index [out, kmax] clipped into range, valid mask [out, kmax], cell count [out]).
    Windows are clipped to the input as the reference's CPU kernel does; adaptive bins are
    [floor(i * size / out), ceil((i + 1) * size / out)).
    """
    i = np.arange(out)
    if adaptive:
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
    else:
        start = i * stride - pad_before
        end = np.minimum(start + k, size)
        start = np.maximum(start, 0)
    count = np.maximum(end - start, 0)
    kmax = max(int(count.max(initial=0)), 1)
    index = start[:, None] + np.arange(kmax)
    valid = index < end[:, None]
    return np.where(valid, index, 0), valid, count


def _pool_kernel(ins, attrs):
    x = ins["X"]
    channels_last = attrs["data_format"] == "NHWC"
    if channels_last:
        x = x.transpose(0, 3, 1, 2)
    h, w = x.shape[2], x.shape[3]
    ksize, strides, pads, (oh, ow) = _pool_geometry(attrs, (h, w))
    adaptive = bool(attrs["adaptive"])
    ih, vh, ch = _pool_index(h, oh, ksize[0], strides[0], pads[0], adaptive)
    iw, vw, cw = _pool_index(w, ow, ksize[1], strides[1], pads[2], adaptive)
    cells = x[:, :, ih[:, :, None, None], iw[None, None, :, :]]       # [N, C, OH, kh, OW, kw]
    valid = vh[:, :, None, None] & vw[None, None, :, :]
    if attrs["pooling_type"] == "max":
        out = np.where(valid, cells, np.array(-np.inf, x.dtype)).max(axis=(3, 5))
    else:
        total = np.where(valid, cells, np.array(0, x.dtype)).sum(axis=(3, 5))
        if attrs["exclusive"] or adaptive:
            divisor = np.maximum(ch[:, None] * cw[None, :], 1)
        else:
            divisor = np.array(ksize[0] * ksize[1])
        out = total / divisor.astype(x.dtype)
    if channels_last:
        out = out.transpose(0, 2, 3, 1)
    return {"Out": np.ascontiguousarray(out, dtype=x.dtype)}


register(
    "pool2d",
    inputs=["X"],
    outputs=["Out"],
    attrs={"pooling_type": "max", "ksize": REQUIRED, "strides": [1, 1], "paddings": [0, 0],
           "global_pooling": False, "exclusive": True, "ceil_mode": False, "adaptive": False,
           "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "use_cudnn": False,
           "use_mkldnn": False},
    infer=_pool_infer,
    kernel=_pool_kernel,
    doc="Out = max or average over (kh, kw) windows of X (global, adaptive and ceil_mode variants)",
)
