"""``paddle.nn.functional`` normalizations beyond batch/layer norm: ``group_norm``,
``instance_norm`` (the ``group_norm`` op with one group per channel) and ``local_response_norm``
(a composition: square, average over a window of channels with ``pool2d``, ``k + alpha * avg``
raised to ``beta`` through exp/log, divide)."""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .tensor import _key, reshape, transpose

_CHANNELS_LAST = ("NLC", "NHWC", "NDHWC")
_FORMATS = ("NC", "NCL", "NCHW", "NCDHW") + _CHANNELS_LAST


def _group_norm(x, groups, epsilon, weight, bias, data_format, func, name):
    if data_format not in _FORMATS:
        raise located(AttrError, f"{func}(): unsupported data_format {data_format!r}")
    if len(x.shape) < 2:
        raise located(ShapeError, f"{func}(): the input must be at least 2-D, got {fmt_shape(x.shape)}")
    ins = {"X": x}
    if weight is not None:
        ins["Scale"] = weight
    if bias is not None:
        ins["Bias"] = bias
    attrs = {"epsilon": float(epsilon), "groups": int(groups),
             "data_layout": "NHWC" if data_format in _CHANNELS_LAST else "NCHW"}
    return apply_op("group_norm", ins, attrs, name_key=_key(func, name))["Y"][0]


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW", name=None):
    """Normalize each sample over ``num_groups`` groups of channels, then scale and shift per channel."""
    return _group_norm(x, num_groups, epsilon, weight, bias, data_format, "group_norm", name)


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Normalize each (sample, channel) over its spatial positions, then scale and shift.

    Running statistics are not kept or used (``use_input_stats=False`` is not supported and says so).
    """
    if running_mean is not None or running_var is not None or not use_input_stats:
        raise located(NotImplementedError, "instance_norm(): running statistics (running_mean/running_var, "
                                  "use_input_stats=False) are not supported yet")
    if data_format not in _FORMATS:
        raise located(AttrError, f"instance_norm(): unsupported data_format {data_format!r}")
    if len(x.shape) < 3:
        raise located(ShapeError, f"instance_norm(): the input must be at least 3-D ([N, C, ...]), got {fmt_shape(x.shape)}")
    channels = x.shape[-1] if data_format in _CHANNELS_LAST else x.shape[1]
    if channels < 0:
        raise located(ShapeError, f"instance_norm(): the channel dim must be known, got {fmt_shape(x.shape)}")
    return _group_norm(x, channels, eps, weight, bias, data_format, "instance_norm", name)


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """``x / (k + alpha * mean over the window of size channels around c of x**2) ** beta``; the
    window is zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after, and the mean
    divides by ``size``."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size <= 0:
        raise located(AttrError, f"local_response_norm(): size must be a positive int, got {size!r}")
    if data_format not in ("NCL", "NCHW", "NLC", "NHWC"):
        raise located(AttrError, f"local_response_norm(): unsupported data_format {data_format!r}")
    rank = len(x.shape)
    if rank not in (3, 4) or x.shape[1 if data_format in ("NCL", "NCHW") else -1] < 0:
        raise located(ShapeError, f"local_response_norm(): the input must be 3-D or 4-D with known channels, "
                         f"got {fmt_shape(x.shape)}")
    key = _key("local_response_norm", name)
    channels_last = data_format in ("NLC", "NHWC")
    xc = transpose(x, [0, rank - 1] + list(range(1, rank - 1))) if channels_last else x
    channels = xc.shape[1]
    sq = apply_op_single("square", {"X": xc}, name_key=key)
    sq = reshape(sq, [0, 1, channels, -1])
    avg = apply_op_single("pool2d", {"X": sq}, {"pooling_type": "avg", "ksize": [int(size), 1], "strides": [1, 1],
                                                 "paddings": [size // 2, (size - 1) // 2, 0, 0],
                                                 "exclusive": False}, name_key=key)
    avg = reshape(avg, [0] + [int(d) for d in xc.shape[1:]])
    base = apply_op_single("scale", {"X": avg}, {"scale": float(alpha), "bias": float(k)}, name_key=key)
    power = apply_op_single("exp", {"X": apply_op_single(
        "scale", {"X": apply_op_single("log", {"X": base}, name_key=key)}, {"scale": float(beta)}, name_key=key)},
        name_key=key)
    out = apply_op_single("elementwise_div", {"X": xc, "Y": power}, name_key=key)
    return transpose(out, [0] + list(range(2, rank)) + [1]) if channels_last else out
