"""``conv2d_transpose``: the transposed (fractionally strided) 2-D convolution.

Input [N, C_in, H, W] (or NHWC), Filter [C_in, C_out / groups, kh, kw] (the reference's layout);
every input pixel scatters ``x * Filter`` into the output at ``h * stride + i * dilation``.  The
output size is ``(H - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
output_padding``; ``output_size`` (if given) picks ``output_padding`` = output_size - that size
without it, which must lie in [0, max(stride, dilation)) as in the reference.  ``padding_algorithm``
'SAME' pads as the forward convolution over the input's dims would (total ``max((ceil(H / s) - 1)
* s + k - H, 0)``, the reference's UpdatePaddingAndDilation), with dilation 1; 'VALID' pads
nothing.

Kernel: one einsum makes the per-offset contributions [N, g, C_out/g, kh, kw, H, W], then a loop
over the kh * kw offsets adds each into a strided slice of the full output, which is cropped by
the padding.  The gradient runs the same loop backwards: each offset's strided slice of the
(padded) Output@GRAD gives Input@GRAD (an einsum with the filter tap) and Filter@GRAD (an einsum
with the input).  Written here, not in conv.py (whose kernels are tuned separately).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import register

_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "output_padding": [], "output_size": [],
          "padding_algorithm": "EXPLICIT", "groups": 1, "dilations": [1, 1], "data_format": "NCHW",
          "use_cudnn": False}
DINPUT, DFILTER, DOUTPUT = grad_slot("Input"), grad_slot("Filter"), grad_slot("Output")


def _pads(attrs, in_hw, k_hw):
    """((top, bottom, left, right), dilations) after the padding algorithm."""
    p = [int(v) for v in attrs["paddings"]]
    pads = (p[0], p[0], p[1], p[1]) if len(p) == 2 else tuple(p)
    algorithm = attrs["padding_algorithm"]
    if algorithm == "VALID":
        return (0, 0, 0, 0), tuple(attrs["dilations"])
    if algorithm != "SAME":
        return pads, tuple(int(d) for d in attrs["dilations"])
    out = []
    for size, k, s in zip(in_hw, k_hw, attrs["strides"]):
        total = 0 if size < 0 else max((-(-size // s) - 1) * s + k - size, 0)
        out += [total // 2, total - total // 2]
    return tuple(out), (1, 1)


def _geometry(attrs, in_hw, k_hw):
    """(pads, dilations, output [H, W], extra [H, W] = output_padding); dims may be -1.
    Raises ValueError naming the attribute when output_size/output_padding do not fit."""
    pads, dilations = _pads(attrs, in_hw, k_hw)
    strides = [int(s) for s in attrs["strides"]]
    base = [-1 if in_hw[i] < 0 or k_hw[i] < 0 else
            (in_hw[i] - 1) * strides[i] - pads[2 * i] - pads[2 * i + 1] + dilations[i] * (k_hw[i] - 1) + 1
            for i in range(2)]
    size, extra = list(attrs["output_size"]), list(attrs["output_padding"])
    if size and extra:
        raise ValueError("output_size|give output_size or output_padding, not both")
    if size:
        extra = [0 if b < 0 else int(s) - b for s, b in zip(size, base)]
        limit_name = "output_size"
    else:
        extra = [int(e) for e in extra] or [0, 0]
        limit_name = "output_padding"
    for i in range(2):
        if not 0 <= extra[i] < max(strides[i], dilations[i]):
            raise ValueError(f"{limit_name}|an output size between {base} and that plus "
                             f"max(stride, dilation) - 1")
    out = [b + e if b >= 0 else (int(size[i]) if size else -1) for i, (b, e) in enumerate(zip(base, extra))]
    return pads, dilations, out, extra


def _infer(ctx):
    x_shape = ctx.check_rank("Input", 4)
    dtype = check_float(ctx, "Input")
    w_shape = ctx.check_rank("Filter", 4)
    ctx.check_same_dtype("Input", "Filter")
    for name, counts in (("strides", (2,)), ("dilations", (2,)), ("paddings", (2, 4)),
                         ("output_padding", (0, 2)), ("output_size", (0, 2))):
        value = ctx.attr(name)
        minimum = 0 if name in ("paddings", "output_padding") else 1
        if len(value) not in counts or any(int(v) != v or v < minimum for v in value):
            ctx.fail_attr(name, f"{' or '.join(map(str, counts))} integers >= {minimum}", value)
    if ctx.attr("padding_algorithm") not in ("EXPLICIT", "SAME", "VALID"):
        ctx.fail_attr("padding_algorithm", "'EXPLICIT', 'SAME' or 'VALID'", ctx.attr("padding_algorithm"))
    if ctx.attr("data_format") not in ("NCHW", "NHWC"):
        ctx.fail_attr("data_format", "'NCHW' or 'NHWC'", ctx.attr("data_format"))
    channels_last = ctx.attr("data_format") == "NHWC"
    n, c, h, w = (x_shape[0], x_shape[3], x_shape[1], x_shape[2]) if channels_last else tuple(x_shape)
    groups = int(ctx.attr("groups"))
    if groups < 1 or (c >= 0 and c % groups):
        ctx.fail_attr("groups", f"an integer >= 1 dividing the input channels ({c})", groups)
    if c >= 0 and w_shape[0] >= 0 and w_shape[0] != c:
        ctx.fail("Filter", f"dim 0 = input channels ({c})", f"shape {fmt_shape(w_shape)}")
    try:
        _, _, out_hw, _ = _geometry(ctx.attrs, (h, w), w_shape[2:])
    except ValueError as error:
        name, expected = str(error).split("|")
        ctx.fail_attr(name, expected, ctx.attr(name))
    if any(0 <= d < 1 for d in out_hw):
        ctx.fail("Input", "an input giving a positive output size", f"shape {fmt_shape(x_shape)}, output {out_hw}")
    m = w_shape[1] * groups if w_shape[1] >= 0 else -1
    ctx.set("Output", (n, out_hw[0], out_hw[1], m) if channels_last else (n, m, out_hw[0], out_hw[1]), dtype)


def _setup(ins, attrs):
    channels_last = attrs["data_format"] == "NHWC"
    x = ins["Input"].transpose(0, 3, 1, 2) if channels_last else ins["Input"]
    f = ins["Filter"]
    pads, dilations, out_hw, _ = _geometry(attrs, x.shape[2:], f.shape[2:])
    return x, f, pads, dilations, out_hw, channels_last


def _full_size(x, f, pads, dilations, out_hw, strides):
    """Rows/cols of the uncropped output: every tap's slice fits, and so does the crop."""
    return [max((x.shape[2 + i] - 1) * strides[i] + dilations[i] * (f.shape[2 + i] - 1) + 1,
                pads[2 * i] + out_hw[i]) for i in range(2)]


def _tap(i, j, x_hw, strides, dilations):
    return (slice(i * dilations[0], i * dilations[0] + (x_hw[0] - 1) * strides[0] + 1, strides[0]),
            slice(j * dilations[1], j * dilations[1] + (x_hw[1] - 1) * strides[1] + 1, strides[1]))


def _kernel(ins, attrs, ctx):
    x, f, pads, dilations, out_hw, channels_last = _setup(ins, attrs)
    g = int(attrs["groups"])
    n, c, h, w = x.shape
    strides = [int(s) for s in attrs["strides"]]
    kh, kw = f.shape[2:]
    cols = np.einsum("ngchw,gcoij->ngoijhw", x.reshape(n, g, c // g, h, w),
                     f.reshape(g, c // g, f.shape[1], kh, kw), optimize=True)
    cols = cols.reshape(n, g * f.shape[1], kh, kw, h, w)
    full = np.zeros([n, g * f.shape[1]] + _full_size(x, f, pads, dilations, out_hw, strides), x.dtype)
    for i in range(kh):
        for j in range(kw):
            rows, columns = _tap(i, j, (h, w), strides, dilations)
            full[:, :, rows, columns] += cols[:, :, i, j]
    out = full[:, :, pads[0]:pads[0] + out_hw[0], pads[2]:pads[2] + out_hw[1]]
    if channels_last:
        out = out.transpose(0, 2, 3, 1)
    return {"Output": np.ascontiguousarray(out)}


def _grad_kernel(ins, attrs, ctx):
    x, f, pads, dilations, out_hw, channels_last = _setup(ins, attrs)
    dout = ins[DOUTPUT].transpose(0, 3, 1, 2) if channels_last else ins[DOUTPUT]
    g = int(attrs["groups"])
    n, c, h, w = x.shape
    o = f.shape[1]
    strides = [int(s) for s in attrs["strides"]]
    full = np.zeros([n, g * o] + _full_size(x, f, pads, dilations, out_hw, strides), x.dtype)
    full[:, :, pads[0]:pads[0] + out_hw[0], pads[2]:pads[2] + out_hw[1]] = dout
    xg = x.reshape(n, g, c // g, h, w)
    fg = f.reshape(g, c // g, o, f.shape[2], f.shape[3])
    dx = np.zeros_like(xg) if DINPUT in ctx.wanted else None
    df = np.zeros_like(fg) if DFILTER in ctx.wanted else None
    for i in range(f.shape[2]):
        for j in range(f.shape[3]):
            rows, columns = _tap(i, j, (h, w), strides, dilations)
            piece = full[:, :, rows, columns].reshape(n, g, o, h, w)
            if dx is not None:
                dx += np.einsum("ngohw,gco->ngchw", piece, fg[:, :, :, i, j], optimize=True)
            if df is not None:
                df[:, :, :, i, j] = np.einsum("ngchw,ngohw->gco", xg, piece, optimize=True)
    outs = {}
    if dx is not None:
        dx = dx.reshape(n, c, h, w)
        outs[DINPUT] = np.ascontiguousarray(dx.transpose(0, 2, 3, 1) if channels_last else dx)
    if df is not None:
        outs[DFILTER] = df.reshape(f.shape)
    return outs


register("conv2d_transpose", inputs=["Input", "Filter"], outputs=["Output"], attrs=dict(_ATTRS), infer=_infer,
         kernel=_kernel,
         grad=Gradient(_grad_kernel, inputs=("Input", "Filter"), output_grads=("Output",),
                       input_grads=("Input", "Filter")),
         doc="Output = the transposed convolution of Input with Filter [C_in, C_out / groups, kh, kw]")
