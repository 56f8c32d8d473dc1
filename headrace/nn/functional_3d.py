"""``paddle.nn.functional`` 3-D forms: ``conv3d``, ``conv3d_transpose`` (ops/conv3d.py) and
``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d``, ``adaptive_max_pool3d`` (op ``pool3d``).
Arguments as the reference (``conv3d_transpose`` takes ``groups`` before ``dilation``);
``padding`` as the 2-D forms (an int, 'SAME'/'VALID', 3 values, 6 before/after values, or 5
pairs).  ``return_mask=True`` (NCDHW) runs ``max_pool3d_with_index`` and also returns the flat
index of each maximum, which ``max_unpool3d`` (op ``unpool3d``) takes."""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .functional_pooling import _unpool_size, spatial_padding
from .tensor import _key

_FORMATS = ("NCDHW", "NDHWC")


def _ints(value, what, func, minimum=0):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [int(value)] * 3
    value = [int(v) for v in value]
    if len(value) != 3 or any(v < minimum for v in value):
        raise located(AttrError, f"{func}(): {what} must be an int or 3 ints >= {minimum}, got {value}")
    return value


def _check(x, data_format, func):
    if data_format not in _FORMATS:
        raise located(AttrError, f"{func}(): data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    if len(x.shape) != 5:
        raise located(ShapeError, f"{func}(): the input must be 5-D, got {fmt_shape(x.shape)}")


def _bias(out, bias, data_format, key):
    if bias is None:
        return out
    return apply_op_single("elementwise_add", {"X": out, "Y": bias}, {"axis": 4 if data_format == "NDHWC" else 1},
                           name_key=key)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None):
    """3-D convolution with ``weight`` [out, C / groups, kd, kh, kw] (+ bias)."""
    _check(x, data_format, "conv3d")
    pads, algorithm = spatial_padding(padding, 3, data_format == "NDHWC", "conv3d")
    key = _key("conv3d", name)
    out = apply_op_single("conv3d", {"Input": x, "Filter": weight},
                          {"strides": _ints(stride, "stride", "conv3d", 1), "paddings": pads,
                           "padding_algorithm": algorithm, "dilations": _ints(dilation, "dilation", "conv3d", 1),
                           "groups": int(groups), "data_format": data_format}, out_slot="Output", name_key=key)
    return _bias(out, bias, data_format, key)


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCDHW", name=None):
    """Transposed 3-D convolution with ``weight`` [C, out / groups, kd, kh, kw] (+ bias)."""
    _check(x, data_format, "conv3d_transpose")
    pads, algorithm = spatial_padding(padding, 3, data_format == "NDHWC", "conv3d_transpose")
    size = [] if output_size is None else _ints(output_size, "output_size", "conv3d_transpose", 1)
    extra = _ints(output_padding, "output_padding", "conv3d_transpose")
    if size and any(extra):
        raise located(AttrError, "conv3d_transpose(): give output_size or output_padding, not both")
    key = _key("conv3d_transpose", name)
    out = apply_op_single("conv3d_transpose", {"Input": x, "Filter": weight},
                          {"strides": _ints(stride, "stride", "conv3d_transpose", 1), "paddings": pads,
                           "padding_algorithm": algorithm, "groups": int(groups),
                           "dilations": _ints(dilation, "dilation", "conv3d_transpose", 1),
                           "output_padding": [] if size or not any(extra) else extra, "output_size": size,
                           "data_format": data_format}, out_slot="Output", name_key=key)
    return _bias(out, bias, data_format, key)


def _pool3d(x, kind, attrs, data_format, func, name):
    _check(x, data_format, func)
    attrs = dict(attrs, pooling_type=kind, data_format=data_format)
    return apply_op_single("pool3d", {"X": x}, attrs, name_key=_key(func, name))


def _windowed(kernel_size, stride, padding, data_format, func):
    ksize = _ints(kernel_size, "kernel_size", func, 1)
    pads, algorithm = spatial_padding(padding, 3, data_format == "NDHWC", func)
    return {"ksize": ksize, "strides": ksize if stride is None else _ints(stride, "stride", func, 1),
            "paddings": pads, "padding_algorithm": algorithm}


def _with_index(x, attrs, data_format, func, name):
    _check(x, data_format, func)
    if data_format != "NCDHW":
        raise located(AttrError, f"{func}(): return_mask=True needs data_format='NCDHW'")
    if attrs.pop("padding_algorithm", "EXPLICIT") != "EXPLICIT":
        raise located(AttrError, f"{func}(): return_mask=True needs explicit (numeric) padding")
    outs = apply_op("max_pool3d_with_index", {"X": x}, attrs, name_key=_key(func, name))
    return outs["Out"][0], outs["Mask"][0]


def max_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False, data_format="NCDHW",
               name=None):
    """Max pooling over D, H and W."""
    attrs = dict(_windowed(kernel_size, stride, padding, data_format, "max_pool3d"), ceil_mode=bool(ceil_mode))
    if return_mask:
        return _with_index(x, attrs, data_format, "max_pool3d", name)
    return _pool3d(x, "max", attrs, data_format, "max_pool3d", name)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    """Average pooling over D, H and W; ``divisor_override`` divides every window sum by that number."""
    attrs = dict(_windowed(kernel_size, stride, padding, data_format, "avg_pool3d"), ceil_mode=bool(ceil_mode),
                 exclusive=bool(exclusive) and divisor_override is None)
    out = _pool3d(x, "avg", attrs, data_format, "avg_pool3d", name)
    if divisor_override is None:
        return out
    if isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Real) or divisor_override <= 0:
        raise located(AttrError, f"avg_pool3d(): divisor_override must be a positive number, got {divisor_override!r}")
    k = attrs["ksize"][0] * attrs["ksize"][1] * attrs["ksize"][2]
    return apply_op_single("scale", {"X": out}, {"scale": k / float(divisor_override)}, name_key=_key("avg_pool3d"))


def _adaptive(x, kind, output_size, data_format, func, name, return_mask=False):
    _check(x, data_format, func)
    spatial = x.shape[1:4] if data_format == "NDHWC" else x.shape[2:]
    if isinstance(output_size, numbers.Integral) and not isinstance(output_size, bool):
        sizes = [int(output_size)] * 3
    else:
        sizes = [spatial[i] if s is None else int(s) for i, s in enumerate(output_size)]
    if len(sizes) != 3 or any(s <= 0 for s in sizes):
        raise located(AttrError, f"{func}(): output_size must be 3 positive sizes (None keeps a known one), got {output_size}")
    if return_mask:
        return _with_index(x, {"ksize": sizes, "adaptive": True}, data_format, func, name)
    return _pool3d(x, kind, {"ksize": sizes, "adaptive": True}, data_format, func, name)


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    """Average over adaptive bins of D, H and W."""
    return _adaptive(x, "avg", output_size, data_format, "adaptive_avg_pool3d", name)


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    """Max over adaptive bins of D, H and W."""
    return _adaptive(x, "max", output_size, "NCDHW", "adaptive_max_pool3d", name, return_mask)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
    """Put each value of ``x`` at its index (from ``max_pool3d(return_mask=True)``) in a zero
    [N, C, D_out, H_out, W_out] (default ``(D - 1) * stride - 2 * padding + kernel_size`` per dim)."""
    _check(x, data_format, "max_unpool3d")
    if data_format != "NCDHW":
        raise located(AttrError, "max_unpool3d(): data_format must be 'NCDHW'")
    ksize = _ints(kernel_size, "kernel_size", "max_unpool3d", 1)
    strides = ksize if stride is None else _ints(stride, "stride", "max_unpool3d", 1)
    pads, _ = spatial_padding(padding, 3, False, "max_unpool3d")
    if min(x.shape[2:]) < 0:
        raise located(ShapeError, f"max_unpool3d(): the spatial sizes must be known, got {fmt_shape(x.shape)}")
    size = _unpool_size(list(x.shape[2:]), ksize, strides, pads, output_size, "max_unpool3d")
    return apply_op_single("unpool3d", {"X": x, "Indices": indices},
                           {"ksize": ksize, "strides": strides, "paddings": pads, "output_size": size},
                           name_key=_key("max_unpool3d", name))
