"""``fused_conv2d_add_act``: conv2d with its per-channel bias added in one op (eager ``F.conv2d``).

The reference has this op for inference (``Input``, ``Filter``, ``Bias``, ``ResidualData``; an
``activation`` attribute).  Ours is the subset eager ``F.conv2d`` needs, with a gradient:
``Output = conv2d(Input, Filter) + Bias`` (Bias [M], one value per output channel), activation
``identity`` only, no ResidualData.  The arithmetic is conv2d's followed by
``elementwise_add(axis=1)``'s, bit for bit (the bias is added to each block of samples while it is
in cache, ``conv_gemm.convolve``); the gradient is conv2d_grad's plus elementwise_add_grad's
Y@GRAD (the same summation call).  A Program built by the layers keeps conv2d and
elementwise_add (the reference's ops), so static and eager results stay identical.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .conv import _CONV_ATTRS, _conv_grad_kernel, _conv_setup, _make_conv_infer, _nchw
from .conv_gemm import convolve
from .elementwise import unbroadcast
from .gradrule import Gradient, grad_slot
from .registry import register

_BIAS_GRAD = grad_slot("Bias")
_conv_infer = _make_conv_infer(depthwise=False)


def _infer(ctx):
    _conv_infer(ctx)
    if ctx.attr("activation") != "identity":
        ctx.fail_attr("activation", "'identity' (other activations are not supported yet)", ctx.attr("activation"))
    ctx.check_same_dtype("Input", "Bias")
    filters, bias = ctx.shape("Filter")[0], list(ctx.shape("Bias"))
    if len(bias) != 1 or -1 not in (filters, bias[0]) and bias[0] != filters:
        ctx.fail("Bias", f"shape [{filters}] (one value per output channel)", fmt_shape(ctx.shape("Bias")))


def _kernel(ins, attrs, ctx):
    x, w, bias = ins["Input"], ins["Filter"], ins["Bias"]
    _, channels_last, strides, pads, dilations, g = _conv_setup(attrs, x.shape, w.shape)
    out = convolve(_nchw(x, channels_last), w, strides, pads, dilations, g, bias=bias)
    return {"Output": np.ascontiguousarray(out.transpose(0, 2, 3, 1) if channels_last else out, dtype=x.dtype)}


def _grad_kernel(ins, attrs, ctx):
    result = _conv_grad_kernel(ins, attrs, ctx)
    if _BIAS_GRAD in ctx.wanted:   # elementwise_add(axis=1 or 3)'s Y@GRAD: the same sum
        dout, channels = ins[grad_slot("Output")], ins["Bias"].shape[0]
        aligned = (1, 1, 1, channels) if attrs["data_format"] == "NHWC" else (1, channels, 1, 1)
        result[_BIAS_GRAD] = unbroadcast(dout, aligned, ins["Bias"].shape)
    return result


register(
    "fused_conv2d_add_act",
    inputs=["Input", "Filter", "Bias"],
    outputs=["Output"],
    attrs=dict(_CONV_ATTRS, activation="identity"),
    infer=_infer,
    kernel=_kernel,
    grad=Gradient(_grad_kernel, inputs=("Input", "Filter", "Bias"), output_grads=("Output",),
                  input_grads=("Input", "Filter", "Bias"), no_need_buffer=("Bias",)),
    doc="Output = conv2d(Input, Filter) + Bias (Bias [M], per output channel): conv2d then "
        "elementwise_add(axis=1) in one op, the same arithmetic; eager F.conv2d with a bias runs it "
        "(activation 'identity' only, no ResidualData)",
)
