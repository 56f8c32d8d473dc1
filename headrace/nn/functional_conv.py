"""``paddle.nn.functional`` convolutions beyond ``conv2d``: ``conv1d``, ``conv2d_transpose`` and
``conv1d_transpose``.

A 1-D convolution over [N, C, L] (or NLC) runs as the 2-D one over [N, C, 1, L] with the weight
[O, C / groups, K] seen as [O, C / groups, 1, K]; ``conv1d_transpose`` likewise uses the
``conv2d_transpose`` op (ops/conv_transpose.py).  Argument names, orders and defaults are the
reference's (note ``conv1d_transpose`` takes ``groups`` before ``dilation``, as there).
"""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op_single
from .functional import conv2d
from .functional_pooling import spatial_padding
from .tensor import _key, squeeze, unsqueeze


def _ints(value, n, what, func, minimum=0):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [int(value)] * n
    else:
        value = [int(v) for v in value]
    if len(value) != n or any(v < minimum for v in value):
        raise located(AttrError, f"{func}(): {what} must be an int or {n} ints >= {minimum}, got {value}")
    return value


def _check(x, weight, rank, data_format, formats, func):
    if data_format not in formats:
        raise located(AttrError, f"{func}(): data_format must be one of {list(formats)}, got {data_format!r}")
    if len(x.shape) != rank:
        raise located(ShapeError, f"{func}(): the input must be {rank}-D, got {fmt_shape(x.shape)}")
    if len(weight.shape) != rank:
        raise located(ShapeError, f"{func}(): the weight must be {rank}-D, got {fmt_shape(weight.shape)}")


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """1-D convolution of [N, C, L] (or NLC) with ``weight`` [out_channels, C / groups, K] (+ bias)."""
    _check(x, weight, 3, data_format, ("NCL", "NLC"), "conv1d")
    channels_last = data_format == "NLC"
    pads, algorithm = spatial_padding(padding, 1, channels_last, "conv1d")
    padding2d = algorithm if algorithm != "EXPLICIT" else [0, 0] + pads
    x4 = unsqueeze(x, [1 if channels_last else 2])
    out = conv2d(x4, unsqueeze(weight, [2]), bias, [1] + _ints(stride, 1, "stride", "conv1d", 1), padding2d,
                 [1] + _ints(dilation, 1, "dilation", "conv1d", 1), groups, "NHWC" if channels_last else "NCHW",
                 name)
    return squeeze(out, [1 if channels_last else 2])


def _transpose2d(x, weight, bias, stride, padding, output_padding, dilation, groups, output_size, data_format,
                 func, name):
    channels_last = data_format in ("NHWC", "NLC")
    pads, algorithm = padding
    attrs = {"strides": stride, "paddings": pads, "padding_algorithm": algorithm, "dilations": dilation,
             "groups": int(groups), "data_format": "NHWC" if channels_last else "NCHW",
             "output_padding": output_padding, "output_size": output_size}
    key = _key(func, name)
    out = apply_op_single("conv2d_transpose", {"Input": x, "Filter": weight}, attrs, out_slot="Output",
                          name_key=key)
    if bias is not None:
        out = apply_op_single("elementwise_add", {"X": out, "Y": bias}, {"axis": 3 if channels_last else 1},
                              name_key=key)
    return out


def _extra(output_padding, output_size, n, func):
    """(output_padding list, output_size list) for the op; at most one of them is non-empty."""
    sizes = [] if output_size is None else _ints(output_size, n, "output_size", func, 1)
    pad = _ints(output_padding, n, "output_padding", func)
    if sizes and any(pad):
        raise located(AttrError, f"{func}(): give output_size or output_padding, not both")
    return ([] if sizes or not any(pad) else pad), sizes


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None):
    """Transposed 2-D convolution of [N, C, H, W] (or NHWC) with ``weight`` [C, out / groups, kh, kw]."""
    _check(x, weight, 4, data_format, ("NCHW", "NHWC"), "conv2d_transpose")
    pad, size = _extra(output_padding, output_size, 2, "conv2d_transpose")
    padding = spatial_padding(padding, 2, data_format == "NHWC", "conv2d_transpose")
    return _transpose2d(x, weight, bias, _ints(stride, 2, "stride", "conv2d_transpose", 1), padding, pad,
                        _ints(dilation, 2, "dilation", "conv2d_transpose", 1), groups, size, data_format,
                        "conv2d_transpose", name)


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCL", name=None):
    """Transposed 1-D convolution of [N, C, L] (or NLC) with ``weight`` [C, out / groups, K]."""
    _check(x, weight, 3, data_format, ("NCL", "NLC"), "conv1d_transpose")
    channels_last = data_format == "NLC"
    pad, size = _extra(output_padding, output_size, 1, "conv1d_transpose")
    pads, algorithm = spatial_padding(padding, 1, channels_last, "conv1d_transpose")
    x4 = unsqueeze(x, [1 if channels_last else 2])
    out = _transpose2d(x4, unsqueeze(weight, [2]), bias, [1] + _ints(stride, 1, "stride", "conv1d_transpose", 1),
                       ([0, 0] + pads, algorithm), [0] + pad if pad else [],
                       [1] + _ints(dilation, 1, "dilation", "conv1d_transpose", 1), groups,
                       [1] + size if size else [], data_format, "conv1d_transpose", name)
    return squeeze(out, [1 if channels_last else 2])
