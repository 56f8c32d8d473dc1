"""``pool2d``: max and average pooling over images (geometry shared with ``ops/conv.py``).

Pooling with regular windows of up to 16 cells reduces kh*kw strided views of the input padded
with -inf (max) or 0 (avg), one pass per window offset (the forward of 2x2 max windows at stride 2
by pairs, ``ops/pool_pairs.py``); adaptive bins of equal size and up to 16 cells are such
windows; a global pooling (or adaptive to 1 x 1) reduces each channel's row
(``ops/pool_tiles.py``); other adaptive bins and larger windows gather each output's window with
index arrays and a validity mask.  All clip windows to the input and share the ``exclusive``
divisor.  Kernels work in NCHW (NHWC is transposed in and out).

Gradients: average pooling is separable (two matmuls with 0/1 window matrices; a global one
broadcasts); max pooling sends each output's gradient to the first maximum of its window in
row-major order, the reference CPU kernel's rule for ties (overlapping windows add up), and
none to a window whose maximum is NaN (Out is NaN, which no cell equals: the reference's rule;
``max_pool2d_with_index`` follows its mask instead, the cell its forward picked).
"""
from __future__ import annotations

import numpy as np

from .conv import (_check_choice, _check_common, _check_ints, _fail_output_size, _four_pads, _nchw, _out_size,
                   _resolve_padding, _spatial)
from .gemm import matmul
from .gradrule import Gradient, grad_slot
from .parallel import split_range
from .pool_pairs import max_pool_pairs, pairs_apply
from .pool_tiles import as_regular, avg_grad_global, global_tile, max_grad_global, pool_global
from .registry import REQUIRED, register


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


def _max_pool_pairs(x, attrs, ksize):
    """2x2 max pooling at stride 2 by pairs (``ops/pool_pairs.py``), or None where it does not apply."""
    _, strides, pads, out_hw = _pool_geometry(attrs, x.shape[2:])
    if not x.flags.c_contiguous or not pairs_apply(attrs, ksize, strides, pads, x.shape[2:], out_hw):
        return None
    return max_pool_pairs(x, out_hw)


def _global(attrs, in_hw) -> bool:
    """Whether every output pools a whole channel (``ops/pool_tiles.py``)."""
    return global_tile(attrs, in_hw, _pool_geometry(attrs, in_hw)[3]) is not None


def _regular(attrs, in_hw):
    """Adaptive bins of equal size and few cells as regular windows (``pool_tiles.as_regular``)."""
    return as_regular(attrs, in_hw, _pool_geometry(attrs, in_hw)[3], _STRIDED_MAX_CELLS) if attrs["adaptive"] else attrs


def _strided(attrs, ksize):
    return not attrs["adaptive"] and ksize[0] * ksize[1] <= _STRIDED_MAX_CELLS


def _pool_kernel(ins, attrs, ctx):
    channels_last = attrs["data_format"] == "NHWC"
    x = _nchw(ins["X"], channels_last)
    attrs = _regular(attrs, x.shape[2:])
    h_axis, w_axis, ksize = _pool_axes(attrs, x.shape[2], x.shape[3])
    if _global(attrs, x.shape[2:]):
        out = pool_global(x, np.maximum if attrs["pooling_type"] == "max" else np.add)
    else:
        out = _max_pool_pairs(x, attrs, ksize)
    if out is None:
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
    nan = np.isnan(np.take_along_axis(cells.reshape(n, c, oh, ow, kh * kw), first[..., None], axis=-1))[..., 0]
    if nan.any():   # a window holding a NaN: Out is NaN, which no cell equals (the strided loop's rule)
        weights = np.where(nan, weights.dtype.type(0), weights)
    dx = np.bincount(target.ravel(), weights=weights.ravel(), minlength=n * c * h * w)
    return dx.reshape(n, c, h, w)


def _pool_grad_kernel(ins, attrs, ctx):
    if grad_slot("X") not in ctx.wanted:
        return {}
    channels_last = attrs["data_format"] == "NHWC"
    x, dout = _nchw(ins["X"], channels_last), _nchw(ins[grad_slot("Out")], channels_last)
    h, w = x.shape[2], x.shape[3]
    attrs = _regular(attrs, (h, w))
    h_axis, w_axis, ksize = _pool_axes(attrs, h, w)
    whole = _global(attrs, (h, w))
    if whole and attrs["pooling_type"] == "avg":
        dx = avg_grad_global(dout / _avg_divisor(attrs, h_axis[2], w_axis[2], ksize, dout.dtype), (h, w))
    elif whole:
        dx = max_grad_global(x, dout)
    elif attrs["pooling_type"] == "avg":
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

