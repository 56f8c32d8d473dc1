"""Convolution over images: ``conv2d``, ``depthwise_conv2d`` (``pool2d`` in ``ops/pool2d.py``
shares the geometry helpers here).

Geometry follows the reference system:

- ``paddings`` is ``[pad_h, pad_w]`` (symmetric) or ``[top, bottom, left, right]``;
- ``padding_algorithm="SAME"`` pads so that ``out = ceil(in / stride)`` (splitting the total pad
  as ``pad // 2`` before, the rest after, and resetting dilation to 1); ``"VALID"`` pads nothing;
- output size ``(in + pad_before + pad_after - (dilation * (k - 1) + 1)) // stride + 1``; pooling
  with ``ceil_mode`` adds ``stride - 1`` to the numerator.

One geometry function per op family is shared by ``infer`` (dims may be -1) and the kernel, so
the two cannot disagree.  Kernels work in NCHW (NHWC is transposed in and out): convolution is
im2col columns from a ``sliding_window_view`` and one batched matmul (``ops/conv_gemm.py``).

Gradients: ``conv2d_grad``/``depthwise_conv2d_grad`` build the columns again (Filter@GRAD is one
matmul with them); Input@GRAD is a forward convolution with flipped filters at stride 1 where
that costs no more, else Filter^T @ Output@GRAD scattered back by ``col2im_batch_last``.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .conv_gemm import (batch_last, col2im_batch_last, columns_batch_last, columns_per_sample, convolve,
                        depthwise_filter_grad, input_grad_as_conv)
from .elementwise import check_float
from .gemm import matmul
from .gradrule import Gradient, grad_slot
from .registry import register

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


def _conv_setup(attrs, in_shape, w_shape):
    """(N, C, H, W), channels_last, strides, pads, dilations, groups of a convolution."""
    channels_last = attrs["data_format"] == "NHWC"
    nchw = _spatial(in_shape, channels_last)
    pads, dilations, _ = _conv_geometry(attrs, nchw[2:], w_shape[2:])
    return nchw, channels_last, [int(s) for s in attrs["strides"]], pads, dilations, int(attrs["groups"])


def _nchw(x, channels_last):
    return x.transpose(0, 3, 1, 2) if channels_last else x


def _conv_kernel(ins, attrs, ctx):
    x, w = ins["Input"], ins["Filter"]
    _, channels_last, strides, pads, dilations, g = _conv_setup(attrs, x.shape, w.shape)
    out = convolve(_nchw(x, channels_last), w, strides, pads, dilations, g)
    return {"Output": np.ascontiguousarray(out.transpose(0, 2, 3, 1) if channels_last else out, dtype=x.dtype)}


def _conv_grad_kernel(ins, attrs, ctx):
    """Filter@GRAD = Output@GRAD @ columns^T; Input@GRAD = a convolution of Output@GRAD with the
    flipped filters (stride 1, ``input_grad_as_conv``) or col2im(Filter^T @ Output@GRAD), in
    the batch-innermost layout (ops/conv_gemm.py).  Filter@GRAD is summed over per-sample products
    instead when those [N, g, M/g, C/g*kh*kw] partials are no larger than Output@GRAD (few
    filters of few cells, e.g. a first layer).  Each is computed only when ctx.wanted (Input's
    data is read only for Filter@GRAD)."""
    x, w, dout = ins["Input"], ins["Filter"], ins[grad_slot("Output")]
    (n, c, h, wd), channels_last, strides, pads, dilations, g = _conv_setup(attrs, x.shape, w.shape)
    m, cg, kh, kw = w.shape
    per_sample = n * m * cg * kh * kw <= dout.size * g
    dx = None
    if grad_slot("Input") in ctx.wanted:
        dx = input_grad_as_conv(_nchw(dout, channels_last), w, (h, wd), strides, pads, dilations, g)
    want_dx = grad_slot("Input") in ctx.wanted and dx is None   # by col2im
    d = batch_last(_nchw(dout, channels_last)).reshape(g, m // g, -1) if want_dx or not per_sample else None
    result = {}
    if grad_slot("Filter") in ctx.wanted:
        xs = _nchw(x, channels_last)
        if cg == 1 and g > 1 and m <= 2 * g:   # depthwise: one input channel and at most two filters a group
            dw = depthwise_filter_grad(xs, _nchw(dout, channels_last), (kh, kw), strides, pads, dilations, g)
        elif per_sample:   # sum over N of [M/g, OH*OW] @ [OH*OW, K/g] per sample and group
            cols, (oh, ow) = columns_per_sample(xs, (kh, kw), strides, pads, dilations, g)
            ds = _nchw(dout, channels_last).reshape(n, g, m // g, oh * ow)
            dw = matmul(ds, cols.transpose(0, 1, 3, 2)).sum(axis=0)
        else:
            # as columns @ Output@GRAD^T, transposed after: 1.35x the BLAS rate of d @ columns^T here
            dw = matmul(columns_batch_last(xs, (kh, kw), strides, pads, dilations, g), d.transpose(0, 2, 1))
            dw = dw.transpose(0, 2, 1)
        result[grad_slot("Filter")] = np.ascontiguousarray(dw.reshape(w.shape), dtype=w.dtype)
    if want_dx:
        filters_t = w.reshape(g, m // g, cg * kh * kw).transpose(0, 2, 1)
        # one output channel per group (depthwise): an outer product, 3x faster broadcast than matmul
        dcols = filters_t * d if m == g else matmul(filters_t, d)
        oh, ow = _spatial(dout.shape, channels_last)[2:]
        dx = col2im_batch_last(dcols.reshape(c, kh, kw, oh, ow, n), (h, wd), strides, pads, dilations)
    if dx is not None:
        dx = dx.transpose(0, 2, 3, 1) if channels_last else dx
        result[grad_slot("Input")] = np.ascontiguousarray(dx, dtype=x.dtype)
    return result


_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
               "groups": 1, "data_format": "NCHW", "use_cudnn": True, "use_mkldnn": False}

def _conv_gradient():
    """``<op>_grad``: reads Input (data needed only for Filter@GRAD), Filter, Output@GRAD."""
    return Gradient(_conv_grad_kernel, inputs=("Input", "Filter"), output_grads=("Output",),
                    input_grads=("Input", "Filter"))


register(
    "conv2d",
    inputs=["Input", "Filter"],
    outputs=["Output"],
    attrs=dict(_CONV_ATTRS),
    infer=_make_conv_infer(depthwise=False),
    kernel=_conv_kernel,
    grad=_conv_gradient(),
    doc="Output = 2-D (grouped) cross-correlation of Input [N, C, H, W] with Filter [M, C/groups, kh, kw]",
)

register(
    "depthwise_conv2d",
    inputs=["Input", "Filter"],
    outputs=["Output"],
    attrs=dict(_CONV_ATTRS),
    infer=_make_conv_infer(depthwise=True),
    kernel=_conv_kernel,
    grad=_conv_gradient(),
    doc="conv2d with groups == C: each input channel has its own M/C filters",
)
