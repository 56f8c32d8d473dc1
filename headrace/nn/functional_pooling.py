"""``paddle.nn.functional`` pooling: max/avg pooling and adaptive pooling in 1-D and 2-D.

All of them are the ``pool2d`` op (``adaptive=True`` for the adaptive forms); a 1-D pooling
over [N, C, L] runs as a 2-D one over [N, C, 1, L] (unsqueeze, pool, squeeze), so there is one
kernel and one gradient.  Arguments follow the reference: ``stride`` defaults to
``kernel_size``; ``padding`` is an int, 'SAME'/'VALID', one value per spatial dim, a
(before, after) pair per spatial dim, or the reference's per-dim pairs including [0, 0] for N and
C; ``exclusive`` (avg) leaves padding out of the divisor; ``divisor_override`` replaces it.
``return_mask=True`` (max pooling, NCHW/NCL) runs the ``max_pool2d_with_index`` op instead and
also returns the flat index of every maximum in its input plane, which ``max_unpool1d/2d``
(op ``unpool``) take to put the values back.
"""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .tensor import _key, squeeze, unsqueeze


def _ints(value, n, what, func):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)] * n
    value = [int(v) for v in value]
    if len(value) != n:
        raise located(AttrError, f"{func}(): {what} must be an int or {n} ints, got {value}")
    return value


def spatial_padding(padding, n, channels_last, func):
    """(paddings [before, after] per spatial dim, flattened; algorithm) from a reference
    ``padding`` argument over ``n`` spatial dims."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise located(AttrError, f"{func}(): padding must be 'SAME', 'VALID' or numbers, got {padding!r}")
        return [0] * (2 * n), algorithm
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return [int(padding)] * (2 * n), "EXPLICIT"
    padding = list(padding)
    if padding and all(isinstance(p, (list, tuple)) for p in padding):
        if len(padding) != n + 2:
            raise located(AttrError, f"{func}(): padding pairs must cover {n + 2} dims (N, C and the spatial ones), "
                             f"got {padding}")
        batch_channel = [padding[0], padding[-1]] if channels_last else padding[:2]
        if any(list(p) != [0, 0] for p in batch_channel):
            raise located(AttrError, f"{func}(): padding of the batch and channel dims must be [0, 0], got {padding}")
        spatial = padding[1:-1] if channels_last else padding[2:]
        return [int(v) for pair in spatial for v in pair], "EXPLICIT"
    padding = [int(p) for p in padding]
    if len(padding) == n:
        return [p for p in padding for _ in range(2)], "EXPLICIT"
    if len(padding) == 2 * n:
        return padding, "EXPLICIT"
    raise located(AttrError, f"{func}(): padding must be an int, 'SAME'/'VALID', {n} or {2 * n} ints, got {padding}")


def _check_rank(x, rank, func):
    if len(x.shape) != rank:
        raise located(ShapeError, f"{func}(): the input must be {rank}-D, got {fmt_shape(x.shape)}")


def _check_format(data_format, allowed, func):
    if data_format not in allowed:
        raise located(AttrError, f"{func}(): data_format must be one of {list(allowed)}, got {data_format!r}")


def _pool(x, kind, ksize, strides, paddings, algorithm, ceil_mode, exclusive, data_format, func, name):
    attrs = {"pooling_type": kind, "ksize": ksize, "strides": strides, "paddings": paddings,
             "padding_algorithm": algorithm, "global_pooling": False, "ceil_mode": bool(ceil_mode),
             "exclusive": bool(exclusive), "adaptive": False, "data_format": data_format}
    return apply_op_single("pool2d", {"X": x}, attrs, name_key=_key(func, name))


def _explicit(paddings, algorithm, sizes, ksize, strides, func):
    """Explicit [top, bottom, left, right] pads for the index op ('SAME' needs known sizes)."""
    if algorithm == "VALID":
        return [0, 0, 0, 0]
    if algorithm == "EXPLICIT":
        return paddings
    if any(d < 0 for d in sizes):
        raise located(AttrError, f"{func}(): padding='SAME' with return_mask=True needs known spatial sizes")
    out = []
    for size, k, s in zip(sizes, ksize, strides):
        total = max((-(-size // s) - 1) * s + k - size, 0)
        out += [total // 2, total - total // 2]
    return out


def _with_index(x, attrs, func, name):
    outs = apply_op("max_pool2d_with_index", {"X": x}, attrs, name_key=_key(func, name))
    return outs["Out"][0], outs["Mask"][0]


def _pool2d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, data_format, func, name,
            return_mask=False):
    _check_rank(x, 4, func)
    _check_format(data_format, ("NCHW", "NHWC"), func)
    ksize = _ints(kernel_size, 2, "kernel_size", func)
    strides = ksize if stride is None else _ints(stride, 2, "stride", func)
    paddings, algorithm = spatial_padding(padding, 2, data_format == "NHWC", func)
    if return_mask:
        if data_format != "NCHW":
            raise located(AttrError, f"{func}(): return_mask=True needs data_format='NCHW'")
        pads = _explicit(paddings, algorithm, x.shape[2:], ksize, strides, func)
        return _with_index(x, {"ksize": ksize, "strides": strides, "paddings": pads, "ceil_mode": bool(ceil_mode)},
                           func, name)
    return _pool(x, kind, ksize, strides, paddings, algorithm, ceil_mode, exclusive, data_format, func, name)


def _pool1d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, func, name, return_mask=False):
    _check_rank(x, 3, func)
    ksize = [1] + _ints(kernel_size, 1, "kernel_size", func)
    strides = ksize if stride is None else [1] + _ints(stride, 1, "stride", func)
    paddings, algorithm = spatial_padding(padding, 1, False, func)
    if return_mask:
        pads = _explicit([0, 0] + paddings, algorithm, [1, x.shape[2]], ksize, strides, func)
        out, mask = _with_index(unsqueeze(x, [2]), {"ksize": ksize, "strides": strides, "paddings": pads,
                                                    "ceil_mode": bool(ceil_mode)}, func, name)
        return squeeze(out, [2]), squeeze(mask, [2])
    out = _pool(unsqueeze(x, [2]), kind, ksize, strides, [0, 0] + paddings, algorithm, ceil_mode, exclusive,
                "NCHW", func, name)
    return squeeze(out, [2])


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    """Max pooling over the last dim of [N, C, L]."""
    return _pool1d(x, "max", kernel_size, stride, padding, ceil_mode, True, "max_pool1d", name, return_mask)


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    """Average pooling over the last dim of [N, C, L]."""
    return _pool1d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, "avg_pool1d", name)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False, data_format="NCHW",
               name=None):
    """Max pooling over H and W of [N, C, H, W] (or NHWC)."""
    return _pool2d(x, "max", kernel_size, stride, padding, ceil_mode, True, data_format, "max_pool2d", name,
                   return_mask)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    """Average pooling over H and W; ``divisor_override`` divides every window sum by that number."""
    if divisor_override is None:
        return _pool2d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, data_format, "avg_pool2d",
                       name)
    if isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Real) or divisor_override <= 0:
        raise located(AttrError, f"avg_pool2d(): divisor_override must be a positive number, got {divisor_override!r}")
    out = _pool2d(x, "avg", kernel_size, stride, padding, ceil_mode, False, data_format, "avg_pool2d", name)
    kh, kw = _ints(kernel_size, 2, "kernel_size", "avg_pool2d")
    return apply_op_single("scale", {"X": out}, {"scale": kh * kw / float(divisor_override)},
                           name_key=_key("avg_pool2d", name))


def _output_size(output_size, n, in_sizes, func):
    if isinstance(output_size, numbers.Integral) and not isinstance(output_size, bool):
        sizes = [int(output_size)] * n
    else:
        sizes = list(output_size)
        if len(sizes) != n:
            raise located(AttrError, f"{func}(): output_size must be an int or {n} values, got {output_size}")
        sizes = [in_sizes[i] if s is None else int(s) for i, s in enumerate(sizes)]
    if any(s is None or s <= 0 for s in sizes):
        raise located(AttrError, f"{func}(): output_size must be positive (None keeps a known input size), got {output_size}")
    return sizes


def _adaptive(x, kind, sizes, data_format, func, name, return_mask=False):
    if return_mask:
        return _with_index(x, {"ksize": sizes, "adaptive": True}, func, name)
    attrs = {"pooling_type": kind, "ksize": sizes, "strides": [1, 1], "paddings": [0, 0],
             "global_pooling": False, "adaptive": True, "data_format": data_format}
    return apply_op_single("pool2d", {"X": x}, attrs, name_key=_key(func, name))


def _adaptive2d(x, kind, output_size, data_format, func, name, return_mask=False):
    _check_rank(x, 4, func)
    _check_format(data_format, ("NCHW", "NHWC"), func)
    hw = x.shape[1:3] if data_format == "NHWC" else x.shape[2:4]
    sizes = _output_size(output_size, 2, [d if d > 0 else None for d in hw], func)
    return _adaptive(x, kind, sizes, data_format, func, name, return_mask)


def _adaptive1d(x, kind, output_size, func, name, return_mask=False):
    _check_rank(x, 3, func)
    sizes = _output_size(output_size, 1, [x.shape[2] if x.shape[2] > 0 else None], func)
    out = _adaptive(unsqueeze(x, [2]), kind, [1] + sizes, "NCHW", func, name, return_mask)
    return (squeeze(out[0], [2]), squeeze(out[1], [2])) if return_mask else squeeze(out, [2])


def adaptive_avg_pool1d(x, output_size, name=None):
    """Average over adaptive bins [floor(i L / out), ceil((i + 1) L / out)) of [N, C, L]."""
    return _adaptive1d(x, "avg", output_size, "adaptive_avg_pool1d", name)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """Max over adaptive bins of [N, C, L]."""
    return _adaptive1d(x, "max", output_size, "adaptive_max_pool1d", name, return_mask)


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average over adaptive bins of H and W (``output_size`` an int or [oh, ow], None keeps a dim)."""
    return _adaptive2d(x, "avg", output_size, data_format, "adaptive_avg_pool2d", name)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max over adaptive bins of H and W of [N, C, H, W]."""
    return _adaptive2d(x, "max", output_size, "NCHW", "adaptive_max_pool2d", name, return_mask)


def _unpool_size(in_sizes, ksize, strides, pads, output_size, func):
    default = [(in_sizes[i] - 1) * strides[i] - pads[2 * i] - pads[2 * i + 1] + ksize[i] for i in range(len(ksize))]
    if output_size is None:
        return default
    size = [int(s) for s in list(output_size)[-len(ksize):]]
    for d, s, st in zip(default, size, strides):
        if not d <= s < d + st:
            raise located(AttrError, f"{func}(): output_size {size} must lie between {default} and that plus the stride - 1")
    return size


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
    """Put each value of ``x`` at its index (from ``max_pool2d(return_mask=True)``) in a zero
    [N, C, H_out, W_out] (default ``(H - 1) * stride - 2 * padding + kernel_size``)."""
    _check_rank(x, 4, "max_unpool2d")
    _check_format(data_format, ("NCHW",), "max_unpool2d")
    ksize = _ints(kernel_size, 2, "kernel_size", "max_unpool2d")
    strides = ksize if stride is None else _ints(stride, 2, "stride", "max_unpool2d")
    pads, _ = spatial_padding(padding, 2, False, "max_unpool2d")
    if min(x.shape[2:]) < 0:
        raise located(ShapeError, f"max_unpool2d(): the spatial sizes must be known, got {fmt_shape(x.shape)}")
    size = _unpool_size(x.shape[2:], ksize, strides, pads, output_size, "max_unpool2d")
    return apply_op_single("unpool", {"X": x, "Indices": indices},
                           {"ksize": ksize, "strides": strides, "paddings": pads, "output_size": size},
                           name_key=_key("max_unpool2d", name))


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
    """``max_unpool2d`` over [N, C, L] (indices from ``max_pool1d(return_mask=True)``)."""
    _check_rank(x, 3, "max_unpool1d")
    _check_format(data_format, ("NCL",), "max_unpool1d")
    k = _ints(kernel_size, 1, "kernel_size", "max_unpool1d")
    s = k if stride is None else _ints(stride, 1, "stride", "max_unpool1d")
    pads, _ = spatial_padding(padding, 1, False, "max_unpool1d")
    if x.shape[2] < 0:
        raise located(ShapeError, f"max_unpool1d(): the length must be known, got {fmt_shape(x.shape)}")
    size = _unpool_size([x.shape[2]], k, s, pads, output_size, "max_unpool1d")
    out = apply_op_single("unpool", {"X": unsqueeze(x, [2]), "Indices": unsqueeze(indices, [2])},
                          {"ksize": [1] + k, "strides": [1] + s, "paddings": [0, 0] + pads, "output_size": [1] + size},
                          name_key=_key("max_unpool1d", name))
    return squeeze(out, [2])


def _power(x, exponent, key):
    y = apply_op_single("fill_constant", attrs={"shape": [1], "dtype": str(x.dtype), "value": float(exponent)},
                        name_key=key)
    return apply_op_single("elementwise_pow", {"X": x, "Y": y}, name_key=key)


def _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, n, func, name):
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real) or norm_type <= 0:
        raise located(AttrError, f"{func}(): norm_type must be a positive number, got {norm_type!r}")
    if norm_type == float("inf"):
        return (max_pool1d(x, kernel_size, stride, padding, False, ceil_mode, name) if n == 1 else
                max_pool2d(x, kernel_size, stride, padding, ceil_mode, False, data_format, name))
    key = _key(func, name)
    powered = _power(x, norm_type, key)
    if n == 1:
        _check_format(data_format, ("NCL",), func)
        window = _ints(kernel_size, 1, "kernel_size", func)[0]
        mean = avg_pool1d(powered, kernel_size, stride, padding, False, ceil_mode, name)
    else:
        kh, kw = _ints(kernel_size, 2, "kernel_size", func)
        window = kh * kw
        mean = avg_pool2d(powered, kernel_size, stride, padding, ceil_mode, False, None, data_format, name)
    total = apply_op_single("scale", {"X": mean}, {"scale": float(window)}, name_key=key)
    return _power(total, 1.0 / norm_type, key)


def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL", name=None):
    """Power-average pooling over [N, C, L]: ``(sum over the window of x ** p) ** (1 / p)``."""
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 1, "lp_pool1d", name)


def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW", name=None):
    """Power-average pooling over H and W: ``(sum over the window of x ** p) ** (1 / p)``."""
    return _lp_pool(x, norm_type, kernel_size, stride, padding, ceil_mode, data_format, 2, "lp_pool2d", name)
