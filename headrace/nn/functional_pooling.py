"""``paddle.nn.functional`` pooling: max/avg pooling and adaptive pooling in 1-D and 2-D.

All of them are the ``pool2d`` op (``adaptive=True`` for the adaptive forms); a 1-D pooling
over [N, C, L] runs as a 2-D one over [N, C, 1, L] (unsqueeze, pool, squeeze), so there is one
kernel and one gradient.  Arguments follow the reference: ``stride`` defaults to
``kernel_size``; ``padding`` is an int, 'SAME'/'VALID', one value per spatial dim, a
(before, after) pair per spatial dim, or the reference's per-dim pairs including [0, 0] for N and
C; ``exclusive`` (avg) leaves padding out of the divisor; ``divisor_override`` replaces it.
``return_mask`` (the argmax indices) is not supported yet and says so.
"""
from __future__ import annotations

import numbers

from ..core.errors import ShapeError, fmt_shape
from ..ops.apply import apply_op_single
from .tensor import _key, squeeze, unsqueeze


def _ints(value, n, what, func):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)] * n
    value = [int(v) for v in value]
    if len(value) != n:
        raise ValueError(f"{func}(): {what} must be an int or {n} ints, got {value}")
    return value


def spatial_padding(padding, n, channels_last, func):
    """(paddings [before, after] per spatial dim, flattened; algorithm) from a reference
    ``padding`` argument over ``n`` spatial dims."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError(f"{func}(): padding must be 'SAME', 'VALID' or numbers, got {padding!r}")
        return [0] * (2 * n), algorithm
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return [int(padding)] * (2 * n), "EXPLICIT"
    padding = list(padding)
    if padding and all(isinstance(p, (list, tuple)) for p in padding):
        if len(padding) != n + 2:
            raise ValueError(f"{func}(): padding pairs must cover {n + 2} dims (N, C and the spatial ones), "
                             f"got {padding}")
        batch_channel = [padding[0], padding[-1]] if channels_last else padding[:2]
        if any(list(p) != [0, 0] for p in batch_channel):
            raise ValueError(f"{func}(): padding of the batch and channel dims must be [0, 0], got {padding}")
        spatial = padding[1:-1] if channels_last else padding[2:]
        return [int(v) for pair in spatial for v in pair], "EXPLICIT"
    padding = [int(p) for p in padding]
    if len(padding) == n:
        return [p for p in padding for _ in range(2)], "EXPLICIT"
    if len(padding) == 2 * n:
        return padding, "EXPLICIT"
    raise ValueError(f"{func}(): padding must be an int, 'SAME'/'VALID', {n} or {2 * n} ints, got {padding}")


def _check_rank(x, rank, func):
    if len(x.shape) != rank:
        raise ShapeError(f"{func}(): the input must be {rank}-D, got {fmt_shape(x.shape)}")


def _no_mask(return_mask, func):
    if return_mask:
        raise NotImplementedError(f"{func}(): return_mask=True (argmax indices) is not supported yet")


def _check_format(data_format, allowed, func):
    if data_format not in allowed:
        raise ValueError(f"{func}(): data_format must be one of {list(allowed)}, got {data_format!r}")


def _pool(x, kind, ksize, strides, paddings, algorithm, ceil_mode, exclusive, data_format, func, name):
    attrs = {"pooling_type": kind, "ksize": ksize, "strides": strides, "paddings": paddings,
             "padding_algorithm": algorithm, "global_pooling": False, "ceil_mode": bool(ceil_mode),
             "exclusive": bool(exclusive), "adaptive": False, "data_format": data_format}
    return apply_op_single("pool2d", {"X": x}, attrs, name_key=_key(func, name))


def _pool2d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, data_format, func, name):
    _check_rank(x, 4, func)
    _check_format(data_format, ("NCHW", "NHWC"), func)
    ksize = _ints(kernel_size, 2, "kernel_size", func)
    strides = ksize if stride is None else _ints(stride, 2, "stride", func)
    paddings, algorithm = spatial_padding(padding, 2, data_format == "NHWC", func)
    return _pool(x, kind, ksize, strides, paddings, algorithm, ceil_mode, exclusive, data_format, func, name)


def _pool1d(x, kind, kernel_size, stride, padding, ceil_mode, exclusive, func, name):
    _check_rank(x, 3, func)
    ksize = [1] + _ints(kernel_size, 1, "kernel_size", func)
    strides = ksize if stride is None else [1] + _ints(stride, 1, "stride", func)
    paddings, algorithm = spatial_padding(padding, 1, False, func)
    out = _pool(unsqueeze(x, [2]), kind, ksize, strides, [0, 0] + paddings, algorithm, ceil_mode, exclusive,
                "NCHW", func, name)
    return squeeze(out, [2])


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    """Max pooling over the last dim of [N, C, L]."""
    _no_mask(return_mask, "max_pool1d")
    return _pool1d(x, "max", kernel_size, stride, padding, ceil_mode, True, "max_pool1d", name)


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    """Average pooling over the last dim of [N, C, L]."""
    return _pool1d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, "avg_pool1d", name)


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False, data_format="NCHW",
               name=None):
    """Max pooling over H and W of [N, C, H, W] (or NHWC)."""
    _no_mask(return_mask, "max_pool2d")
    return _pool2d(x, "max", kernel_size, stride, padding, ceil_mode, True, data_format, "max_pool2d", name)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    """Average pooling over H and W; ``divisor_override`` divides every window sum by that number."""
    if divisor_override is None:
        return _pool2d(x, "avg", kernel_size, stride, padding, ceil_mode, exclusive, data_format, "avg_pool2d",
                       name)
    if isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Real) or divisor_override <= 0:
        raise ValueError(f"avg_pool2d(): divisor_override must be a positive number, got {divisor_override!r}")
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
            raise ValueError(f"{func}(): output_size must be an int or {n} values, got {output_size}")
        sizes = [in_sizes[i] if s is None else int(s) for i, s in enumerate(sizes)]
    if any(s is None or s <= 0 for s in sizes):
        raise ValueError(f"{func}(): output_size must be positive (None keeps a known input size), got {output_size}")
    return sizes


def _adaptive(x, kind, sizes, data_format, func, name):
    attrs = {"pooling_type": kind, "ksize": sizes, "strides": [1, 1], "paddings": [0, 0],
             "global_pooling": False, "adaptive": True, "data_format": data_format}
    return apply_op_single("pool2d", {"X": x}, attrs, name_key=_key(func, name))


def _adaptive2d(x, kind, output_size, data_format, func, name):
    _check_rank(x, 4, func)
    _check_format(data_format, ("NCHW", "NHWC"), func)
    hw = x.shape[1:3] if data_format == "NHWC" else x.shape[2:4]
    sizes = _output_size(output_size, 2, [d if d > 0 else None for d in hw], func)
    return _adaptive(x, kind, sizes, data_format, func, name)


def _adaptive1d(x, kind, output_size, func, name):
    _check_rank(x, 3, func)
    sizes = _output_size(output_size, 1, [x.shape[2] if x.shape[2] > 0 else None], func)
    return squeeze(_adaptive(unsqueeze(x, [2]), kind, [1] + sizes, "NCHW", func, name), [2])


def adaptive_avg_pool1d(x, output_size, name=None):
    """Average over adaptive bins [floor(i L / out), ceil((i + 1) L / out)) of [N, C, L]."""
    return _adaptive1d(x, "avg", output_size, "adaptive_avg_pool1d", name)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    """Max over adaptive bins of [N, C, L]."""
    _no_mask(return_mask, "adaptive_max_pool1d")
    return _adaptive1d(x, "max", output_size, "adaptive_max_pool1d", name)


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average over adaptive bins of H and W (``output_size`` an int or [oh, ow], None keeps a dim)."""
    return _adaptive2d(x, "avg", output_size, data_format, "adaptive_avg_pool2d", name)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    """Max over adaptive bins of H and W of [N, C, H, W]."""
    _no_mask(return_mask, "adaptive_max_pool2d")
    return _adaptive2d(x, "max", output_size, "NCHW", "adaptive_max_pool2d", name)
