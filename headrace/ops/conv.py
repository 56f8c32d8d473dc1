"""Convolution and pooling over images: ``conv2d``, ``depthwise_conv2d``, ``pool2d``.

Geometry follows the reference system:

- ``paddings`` is ``[pad_h, pad_w]`` (symmetric) or ``[top, bottom, left, right]``;
- ``padding_algorithm="SAME"`` pads so that ``out = ceil(in / stride)`` (splitting the total pad
  as ``pad // 2`` before, the rest after, and resetting dilation to 1); ``"VALID"`` pads nothing;
- output size ``(in + pad_before + pad_after - (dilation * (k - 1) + 1)) // stride + 1``; pooling
  with ``ceil_mode`` adds ``stride - 1`` to the numerator.

One geometry function per op family is shared by ``infer`` (dims may be -1) and the kernel, so
the two cannot disagree.  Kernels work in NCHW (NHWC is transposed in and out): convolution is
im2col columns from a ``sliding_window_view`` and one batched matmul (``ops/conv_gemm.py``); pooling with regular windows of up to 16 cells reduces kh*kw strided views
of the input padded with -inf (max) or 0 (avg), one pass per window offset; adaptive bins and
larger windows gather each output's window with index arrays and a validity mask.  Both clip
windows to the input and share the ``exclusive`` divisor.

Gradients: ``conv2d_grad``/``depthwise_conv2d_grad`` build the columns again (Filter@GRAD is one
matmul with them); Input@GRAD is a forward convolution with flipped filters at stride 1 where
that costs no more, else Filter^T @ Output@GRAD scattered back by ``col2im_batch_last``.
``pool2d_grad``: average pooling is separable (two matmuls with 0/1 window matrices); max pooling
sends each output's gradient to the first maximum of its window in row-major order, the
reference CPU kernel's rule for ties (overlapping windows add up).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .conv_gemm import (batch_last, col2im_batch_last, columns_batch_last, columns_per_sample, convolve,
                        input_grad_as_conv)
from .elementwise import check_float
from .gemm import matmul
from .gradrule import Gradient, grad_slot
from .parallel import split_range
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
        if per_sample:   # sum over N of [M/g, OH*OW] @ [OH*OW, K/g] per sample and group
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


def _pool_axes(attrs, h, w):
    """Per-axis windows of a pooling over an [H, W] input: ((ih, vh, ch), (iw, vw, cw)) as
    ``_pool_index`` gives them, and the ``ksize`` in effect."""
    ksize, strides, pads, (oh, ow) = _pool_geometry(attrs, (h, w))
    adaptive = bool(attrs["adaptive"])
    return (_pool_index(h, oh, ksize[0], strides[0], pads[0], adaptive),
            _pool_index(w, ow, ksize[1], strides[1], pads[2], adaptive), ksize)


def _avg_divisor(attrs, ch, cw, ksize, dtype):
    """[OH, OW] (or scalar) divisor of average pooling: cells in the window (exclusive,
    adaptive) or kh * kw (inclusive)."""
    if attrs["exclusive"] or attrs["adaptive"]:
        return np.maximum(ch[:, None] * cw[None, :], 1).astype(dtype)
    return np.array(ksize[0] * ksize[1], dtype)


_STRIDED_MAX_CELLS = 16  # windows up to this size use the loop over window offsets


def _pad_for_windows(x, ksize, strides, pads, out_hw, fill):
    """NCHW ``x`` padded with ``fill`` so that every window fits (top/left pads as given, bottom/
    right as far as the last window reaches, ceil_mode overhang included), and ``cells(a, b)``:
    the index of the [N, C, OH, OW] strided view of each window's cell at offset (a, b)."""
    (kh, kw), (sh, sw), (oh, ow) = ksize, strides, out_hw
    h, w = x.shape[2:]
    top, left = pads[0], pads[2]
    bottom, right = max((oh - 1) * sh + kh - h - top, 0), max((ow - 1) * sw + kw - w - left, 0)
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)

    def cells(a, b):
        return (slice(None), slice(None), slice(a, a + sh * (oh - 1) + 1, sh), slice(b, b + sw * (ow - 1) + 1, sw))
    return x, cells


def _pool_strided(x, attrs, ksize):
    """Regular windows: max (or sum) over the kh*kw strided views of X, one pass per offset,
    pieces of the batch on threads (``split_range``: element-wise, so bit-identical)."""
    _, strides, pads, out_hw = _pool_geometry(attrs, x.shape[2:])
    reduce = np.maximum if attrs["pooling_type"] == "max" else np.add
    padded, cells = _pad_for_windows(x, ksize, strides, pads, out_hw, -np.inf if reduce is np.maximum else 0)
    offsets = [(a, b) for a in range(ksize[0]) for b in range(ksize[1])]
    out = np.empty(x.shape[:2] + tuple(out_hw), x.dtype)

    def piece(start, stop):
        xs, o = padded[start:stop], out[start:stop]
        if len(offsets) == 1:
            o[...] = xs[cells(0, 0)]
        else:
            reduce(xs[cells(*offsets[0])], xs[cells(*offsets[1])], out=o)
        for a, b in offsets[2:]:
            reduce(o, xs[cells(a, b)], out=o)
    split_range(piece, x.shape[0], padded.size)
    return out


def _pool_gather(x, attrs, h_axis, w_axis):
    """Any windows (adaptive, large): gather each output's window with index arrays, reduce the
    valid cells."""
    (ih, vh, _), (iw, vw, _) = h_axis, w_axis
    cells = x[:, :, ih[:, :, None, None], iw[None, None, :, :]]       # [N, C, OH, kh, OW, kw]
    valid = vh[:, :, None, None] & vw[None, None, :, :]
    if attrs["pooling_type"] == "max":
        return np.where(valid, cells, np.array(-np.inf, x.dtype)).max(axis=(3, 5))
    return np.where(valid, cells, np.array(0, x.dtype)).sum(axis=(3, 5))


def _strided(attrs, ksize):
    return not attrs["adaptive"] and ksize[0] * ksize[1] <= _STRIDED_MAX_CELLS


def _pool_kernel(ins, attrs, ctx):
    channels_last = attrs["data_format"] == "NHWC"
    x = _nchw(ins["X"], channels_last)
    h_axis, w_axis, ksize = _pool_axes(attrs, x.shape[2], x.shape[3])
    out = _pool_strided(x, attrs, ksize) if _strided(attrs, ksize) else _pool_gather(x, attrs, h_axis, w_axis)
    if attrs["pooling_type"] == "avg":
        out = out / _avg_divisor(attrs, h_axis[2], w_axis[2], ksize, x.dtype)
    if channels_last:
        out = out.transpose(0, 2, 3, 1)
    return {"Out": np.ascontiguousarray(out, dtype=x.dtype)}


def _window_matrix(index, valid, size, dtype):
    """[OUT, size] 0/1 matrix: row i marks the input cells of output i's window along one axis."""
    rows, k = np.nonzero(valid)
    matrix = np.zeros((index.shape[0], size), dtype)
    matrix[rows, index[rows, k]] = 1
    return matrix


def _avg_pool_grad(dout, h_axis, w_axis, attrs, ksize, h, w):
    """Windows are separable, so X@GRAD = Mh^T @ (Out@GRAD / divisor) @ Mw with the 0/1 window
    matrices Mh [OH, H], Mw [OW, W]: two BLAS products, for every padding/ceil/adaptive mode."""
    (ih, vh, ch), (iw, vw, cw) = h_axis, w_axis
    scaled = dout / _avg_divisor(attrs, ch, cw, ksize, dout.dtype)
    n, c, oh, ow = scaled.shape
    rows = matmul(scaled.reshape(n * c * oh, ow), _window_matrix(iw, vw, w, dout.dtype))
    return matmul(_window_matrix(ih, vh, h, dout.dtype).T, rows.reshape(n * c, oh, w)).reshape(n, c, h, w)


def _max_pool_grad_strided(x, out, dout, ksize, strides, pads):
    """Regular windows: loop over the kh*kw window offsets on strided views of X padded with
    -inf; at each offset, the windows whose maximum (``out``, the forward's Out, or computed
    again when it is None) sits there and was not found earlier take their gradient (so the
    first maximum in row-major order wins, as in ``_max_pool_grad_gather``).  Windows that do
    not overlap write their cells once (only the cells no window covers are zeroed); overlapping
    ones add up.  Pieces of the batch run on threads (``split_range``)."""
    h, w = x.shape[2:]
    (kh, kw), (sh, sw), top, left = ksize, strides, pads[0], pads[2]
    (oh, ow) = dout.shape[2:]
    x, cells = _pad_for_windows(x, ksize, strides, pads, (oh, ow), -np.inf)
    if out is None:
        out = x[cells(0, 0)].copy()
        for a in range(kh):
            for b in range(kw):
                np.maximum(out, x[cells(a, b)], out=out)
    tiled = sh == kh and sw == kw     # windows tile the array: each cell written at most once
    dx = np.empty(x.shape, dout.dtype)

    def piece(start, stop):
        d, xs, best, g = dx[start:stop], x[start:stop], out[start:stop], dout[start:stop]
        if tiled:
            d[:, :, oh * sh:] = 0
            d[:, :, :oh * sh, ow * sw:] = 0
        else:
            d[...] = 0
        found = None
        for a in range(kh):
            for b in range(kw):
                hit = np.equal(xs[cells(a, b)], best)
                if found is None:
                    found = hit
                else:
                    np.greater(hit, found, out=hit)        # hit and not found before
                    found |= hit
                if tiled:
                    np.multiply(g, hit, out=d[cells(a, b)])
                else:
                    d[cells(a, b)] += g * hit
    split_range(piece, x.shape[0], x.size)
    return dx[:, :, top:top + h, left:left + w]


def _max_pool_grad_gather(x, dout, h_axis, w_axis):
    """Any windows (adaptive, large): gather every window, take the first maximum in row-major
    order (the reference CPU kernel's rule for ties) and scatter-add with ``bincount``."""
    (ih, vh, ch), (iw, vw, cw) = h_axis, w_axis
    n, c, h, w = x.shape
    oh, ow = ih.shape[0], iw.shape[0]
    kh, kw = ih.shape[1], iw.shape[1]
    cells = x[:, :, ih[:, None, :, None], iw[None, :, None, :]]        # [N, C, OH, OW, kh, kw]
    valid = vh[:, None, :, None] & vw[None, :, None, :]
    if not valid.all():
        np.copyto(cells, np.array(-np.inf, x.dtype), where=~valid)
    first = cells.reshape(n, c, oh, ow, kh * kw).argmax(axis=-1)
    row = ih[np.arange(oh)[:, None], first // kw]
    col = iw[np.arange(ow), first % kw]
    target = row * w + col + (np.arange(n * c) * (h * w)).reshape(n, c, 1, 1)
    nonempty = (ch > 0)[:, None] & (cw > 0)[None, :]
    weights = dout if nonempty.all() else dout * nonempty  # windows lying wholly in the padding
    dx = np.bincount(target.ravel(), weights=weights.ravel(), minlength=n * c * h * w)
    return dx.reshape(n, c, h, w)


def _pool_grad_kernel(ins, attrs, ctx):
    if grad_slot("X") not in ctx.wanted:
        return {}
    channels_last = attrs["data_format"] == "NHWC"
    x, dout = _nchw(ins["X"], channels_last), _nchw(ins[grad_slot("Out")], channels_last)
    h, w = x.shape[2], x.shape[3]
    h_axis, w_axis, ksize = _pool_axes(attrs, h, w)
    if attrs["pooling_type"] == "avg":
        dx = _avg_pool_grad(dout, h_axis, w_axis, attrs, ksize, h, w)
    elif _strided(attrs, ksize):
        _, strides, pads, _ = _pool_geometry(attrs, (h, w))
        out = ins.get("Out")
        out = None if out is None else _nchw(out, channels_last)
        dx = _max_pool_grad_strided(x, out, dout, ksize, strides, pads)
    else:
        dx = _max_pool_grad_gather(x, dout, h_axis, w_axis)
    if channels_last:
        dx = dx.transpose(0, 2, 3, 1)
    return {grad_slot("X"): np.ascontiguousarray(dx, dtype=x.dtype)}


_POOL_ATTRS = {"pooling_type": "max", "ksize": REQUIRED, "strides": [1, 1], "paddings": [0, 0],
               "global_pooling": False, "exclusive": True, "ceil_mode": False, "adaptive": False,
               "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "use_cudnn": False,
               "use_mkldnn": False}

register(
    "pool2d",
    inputs=["X"],
    outputs=["Out"],
    attrs=dict(_POOL_ATTRS),
    infer=_pool_infer,
    kernel=_pool_kernel,
    grad=Gradient(_pool_grad_kernel, inputs=("X",), outputs=("Out",), optional=("Out",),
                  like={grad_slot("X"): "X"}),
    doc="Out = max or average over (kh, kw) windows of X (global, adaptive and ceil_mode variants)",
)

