"""3-D convolution and its transpose: ``conv3d`` and ``conv3d_transpose``.

Input [N, C, D, H, W] (or NDHWC); ``conv3d`` Filter [M, C / groups, kd, kh, kw], ``conv3d_transpose``
Filter [C, M / groups, kd, kh, kw] (the reference's layouts).  ``paddings`` has 3 values
(symmetric) or 6 (before/after per dim); 'SAME'/'VALID' as for 2-D (SAME pads as the forward
convolution over the input's dims, dilation 1).  Sizes: conv ``(in + pads - (d (k - 1) + 1)) //
s + 1``; transpose ``(in - 1) s - pads + d (k - 1) + 1 + output_padding`` (``output_size`` picks
output_padding, below max(stride, dilation)).

Both ops are one loop over the kd * kh * kw filter taps: tap (a, b, c) of a convolution reads the
strided slice ``x_padded[a d : a d + (O - 1) s + 1 : s]`` (per dim) and adds ``einsum(slice,
W[tap])`` to the output; the transposed convolution adds ``einsum(x, W[tap])`` into that slice of
the output.  The gradients run the same loop the other way (each op's input gradient is the other
op's computation).  Written here, not in conv.py (whose 2-D kernels are tuned separately).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import register

_ATTRS = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "padding_algorithm": "EXPLICIT", "groups": 1,
          "dilations": [1, 1, 1], "data_format": "NCDHW", "use_cudnn": False}
_T_ATTRS = dict(_ATTRS, output_padding=[], output_size=[])
DINPUT, DFILTER, DOUTPUT = grad_slot("Input"), grad_slot("Filter"), grad_slot("Output")


def _pads(attrs, sizes, ksize):
    """(before/after pads per dim, dilations) after the padding algorithm."""
    p = [int(v) for v in attrs["paddings"]]
    pads = [v for v in p for _ in range(2)] if len(p) == 3 else p
    if attrs["padding_algorithm"] == "VALID":
        return [0] * 6, [int(d) for d in attrs["dilations"]]
    if attrs["padding_algorithm"] != "SAME":
        return pads, [int(d) for d in attrs["dilations"]]
    out = []
    for size, k, s in zip(sizes, ksize, attrs["strides"]):
        total = 0 if size < 0 else max((-(-size // s) - 1) * s + k - size, 0)
        out += [total // 2, total - total // 2]
    return out, [1, 1, 1]


def _conv_sizes(attrs, sizes, ksize):
    pads, dil = _pads(attrs, sizes, ksize)
    return [-1 if n < 0 else (n + pads[2 * i] + pads[2 * i + 1] - dil[i] * (ksize[i] - 1) - 1) // attrs["strides"][i] + 1
            for i, n in enumerate(sizes)]


def _transpose_sizes(attrs, sizes, ksize):
    pads, dil = _pads(attrs, sizes, ksize)
    base = [-1 if n < 0 else (n - 1) * attrs["strides"][i] - pads[2 * i] - pads[2 * i + 1] + dil[i] * (ksize[i] - 1) + 1
            for i, n in enumerate(sizes)]
    given, extra = list(attrs["output_size"]), [int(e) for e in attrs["output_padding"]] or [0, 0, 0]
    if given:
        extra = [0 if b < 0 else int(g) - b for g, b in zip(given, base)]
    for i in range(3):
        if not 0 <= extra[i] < max(attrs["strides"][i], dil[i]):
            raise ValueError(f"{'output_size' if given else 'output_padding'}|an output size between {base} and "
                             f"that plus max(stride, dilation) - 1")
    return [b + e if b >= 0 else (int(given[i]) if given else -1) for i, (b, e) in enumerate(zip(base, extra))]


def _make_infer(transposed):
    def infer(ctx):
        x = ctx.check_rank("Input", 5)
        dtype = check_float(ctx, "Input")
        w = ctx.check_rank("Filter", 5)
        ctx.check_same_dtype("Input", "Filter")
        for name, counts in (("strides", (3,)), ("dilations", (3,)), ("paddings", (3, 6))):
            value = ctx.attr(name)
            if len(value) not in counts or any(int(v) < (0 if name == "paddings" else 1) for v in value):
                ctx.fail_attr(name, f"{' or '.join(map(str, counts))} non-negative integers", value)
        if ctx.attr("data_format") not in ("NCDHW", "NDHWC"):
            ctx.fail_attr("data_format", "'NCDHW' or 'NDHWC'", ctx.attr("data_format"))
        last = ctx.attr("data_format") == "NDHWC"
        n, c, sizes = x[0], (x[4] if last else x[1]), (list(x[1:4]) if last else list(x[2:]))
        groups = int(ctx.attr("groups"))
        if groups < 1 or (c >= 0 and c % groups):
            ctx.fail_attr("groups", f"a positive divisor of the input channels ({c})", groups)
        want_c = w[0] if transposed else w[1] * groups
        if c >= 0 and w[0] >= 0 and want_c != c:
            ctx.fail("Filter", f"a filter matching {c} input channels and groups={groups}", f"shape {fmt_shape(w)}")
        try:
            out = (_transpose_sizes if transposed else _conv_sizes)(ctx.attrs, sizes, list(w[2:]))
        except ValueError as error:
            name, expected = str(error).split("|")
            ctx.fail_attr(name, expected, ctx.attr(name))
        if any(0 <= d < 1 for d in out):
            ctx.fail("Input", "an input large enough for the filter", f"shape {fmt_shape(x)} gives {out}")
        m = w[1] * groups if transposed else w[0]
        ctx.set("Output", (n, *out, m) if last else (n, m, *out), dtype)
    return infer


def _tap_slices(tap, sizes, strides, dilations):
    return tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, n, s, d in zip(tap, sizes, strides, dilations))


def _prepare(ins, attrs, transposed):
    last = attrs["data_format"] == "NDHWC"
    x = np.moveaxis(ins["Input"], -1, 1) if last else ins["Input"]
    f = ins["Filter"]
    g = int(attrs["groups"])
    ksize = list(f.shape[2:])
    pads, dil = _pads(attrs, list(x.shape[2:]), ksize)
    out = (_transpose_sizes if transposed else _conv_sizes)(attrs, list(x.shape[2:]), ksize)
    return x, f, g, ksize, pads, dil, out, last


def _grouped_filter(f, g, transposed):
    """[g, C/g, M/g, *k] (input channels first) for either layout."""
    if transposed:
        return f.reshape(g, f.shape[0] // g, f.shape[1], *f.shape[2:])
    return np.swapaxes(f.reshape(g, f.shape[0] // g, f.shape[1], *f.shape[2:]), 1, 2)


def _full(shape_nc, small, large, pads):
    """A zero array holding ``large`` (the padded side) and the crop that is ``small``."""
    size = [max(lg, p + sm) for lg, sm, p in zip(large, small, pads[0::2])]
    crop = tuple(slice(p, p + sm) for p, sm in zip(pads[0::2], small))
    return np.zeros(tuple(shape_nc) + tuple(size)), crop


def _scatter_taps(src, fg, ksize, strides, dil, full, crop):
    """full[tap slice] += einsum(src, W[tap]) for every tap; returns the cropped result."""
    n, g = src.shape[:2]
    for tap in itertools.product(*(range(k) for k in ksize)):
        part = np.einsum("ngc...,gco->ngo...", src, fg[(slice(None),) * 3 + tap], optimize=True)
        full[(slice(None), slice(None)) + _tap_slices(tap, src.shape[3:], strides, dil)] += \
            part.reshape(n, -1, *part.shape[3:])
    return full[(slice(None), slice(None)) + crop]


def _gather_taps(padded, fg, ksize, strides, dil, out_sizes):
    """sum over taps of einsum(padded[tap slice], W[tap]) -> [N, g, M/g, *out]."""
    n, g = padded.shape[0], fg.shape[0]
    total = 0
    for tap in itertools.product(*(range(k) for k in ksize)):
        piece = padded[(slice(None), slice(None)) + _tap_slices(tap, out_sizes, strides, dil)]
        piece = piece.reshape(n, g, -1, *piece.shape[2:])
        total = total + np.einsum("ngc...,gco->ngo...", piece, fg[(slice(None),) * 3 + tap], optimize=True)
    return total


def _filter_grad(a, b, ksize, strides, dil, small_sizes):
    """[g, C/g, M/g, *k]: per tap, einsum over batch and positions of a[tap slice] (C side) with b (M side)."""
    g = b.shape[1]
    out = np.zeros((g, a.shape[1] // g, b.shape[2]) + tuple(ksize))
    n = a.shape[0]
    for tap in itertools.product(*(range(k) for k in ksize)):
        piece = a[(slice(None), slice(None)) + _tap_slices(tap, small_sizes, strides, dil)]
        out[(slice(None),) * 3 + tap] = np.einsum("ngc...,ngo...->gco", piece.reshape(n, g, -1, *piece.shape[2:]), b,
                                                  optimize=True)
    return out


def _pad(x, pads):
    return np.pad(x, ((0, 0), (0, 0)) + tuple((pads[2 * i], pads[2 * i + 1]) for i in range(3)))


def _conv_kernel(ins, attrs, ctx):
    x, f, g, ksize, pads, dil, out, last = _prepare(ins, attrs, False)
    strides = [int(s) for s in attrs["strides"]]
    y = _gather_taps(_pad(x, pads), _grouped_filter(f, g, False), ksize, strides, dil, out)
    y = y.reshape(x.shape[0], -1, *out).astype(x.dtype)
    return {"Output": np.ascontiguousarray(np.moveaxis(y, 1, -1) if last else y)}


def _transpose_kernel(ins, attrs, ctx):
    x, f, g, ksize, pads, dil, out, last = _prepare(ins, attrs, True)
    strides = [int(s) for s in attrs["strides"]]
    n = x.shape[0]
    full, crop = _full((n, f.shape[1] * g), out, [(s - 1) * st + d * (k - 1) + 1 for s, st, d, k in
                                                  zip(x.shape[2:], strides, dil, ksize)], pads)
    y = _scatter_taps(x.reshape(n, g, -1, *x.shape[2:]), _grouped_filter(f, g, True), ksize, strides, dil, full, crop)
    y = y.astype(x.dtype)
    return {"Output": np.ascontiguousarray(np.moveaxis(y, 1, -1) if last else y)}


def _grad_kernel(transposed):
    def kernel(ins, attrs, ctx):
        x, f, g, ksize, pads, dil, out, last = _prepare(ins, attrs, transposed)
        strides = [int(s) for s in attrs["strides"]]
        dout = np.moveaxis(ins[DOUTPUT], -1, 1) if last else ins[DOUTPUT]
        n = x.shape[0]
        fg = _grouped_filter(f, g, transposed)
        outs = {}
        if transposed:   # Output = scatter(x); dX = gather(dOut_padded); dW from x and the slices
            padded, _ = _full((n, dout.shape[1]), out, [(s - 1) * st + d * (k - 1) + 1 for s, st, d, k in
                                                        zip(x.shape[2:], strides, dil, ksize)], pads)
            padded[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pads[0::2], out))] = dout
            fx = np.swapaxes(fg, 1, 2)
            dx = _gather_taps(padded, fx, ksize, strides, dil, list(x.shape[2:])) if DINPUT in ctx.wanted else None
            dw = (np.swapaxes(_filter_grad(padded, x.reshape(n, g, -1, *x.shape[2:]), ksize, strides, dil,
                                           list(x.shape[2:])), 1, 2) if DFILTER in ctx.wanted else None)
        else:            # Output = gather(x_padded); dX = scatter(dOut) cropped; dW from the slices and dOut
            dg = dout.reshape(n, g, -1, *dout.shape[2:])
            dx = None
            if DINPUT in ctx.wanted:
                full, crop = _full((n, x.shape[1]), list(x.shape[2:]), [s + pads[2 * i] + pads[2 * i + 1]
                                                                       for i, s in enumerate(x.shape[2:])], pads)
                dx = _scatter_taps(dg, np.swapaxes(fg, 1, 2), ksize, strides, dil, full, crop)
            dw = _filter_grad(_pad(x, pads), dg, ksize, strides, dil, out) if DFILTER in ctx.wanted else None
        if dx is not None:
            dx = dx.reshape(x.shape).astype(x.dtype)
            outs[DINPUT] = np.ascontiguousarray(np.moveaxis(dx, 1, -1) if last else dx)
        if dw is not None:
            w_layout = dw if transposed else np.swapaxes(dw, 1, 2)
            outs[DFILTER] = np.ascontiguousarray(w_layout.reshape(f.shape).astype(f.dtype))
        return outs
    return kernel


for _type, _transposed, _attrs, _kernel in (("conv3d", False, _ATTRS, _conv_kernel),
                                            ("conv3d_transpose", True, _T_ATTRS, _transpose_kernel)):
    register(_type, inputs=["Input", "Filter"], outputs=["Output"], attrs=dict(_attrs),
             infer=_make_infer(_transposed), kernel=_kernel,
             grad=Gradient(_grad_kernel(_transposed), inputs=("Input", "Filter"), output_grads=("Output",),
                           input_grads=("Input", "Filter")),
             doc=f"3-D {'transposed ' if _transposed else ''}convolution of Input with Filter")
