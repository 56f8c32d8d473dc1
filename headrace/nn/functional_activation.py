"""``paddle.nn.functional`` activations beyond relu/sigmoid/tanh/gelu/leaky_relu/softmax.

Each is one op of ``ops/activation_ext.py`` (attributes named as the reference's ops) or, for
``glu``, ``maxout`` and ``silu``, a composition of existing ops; all go through ``apply_op``, so
they serve both modes.  Argument names and defaults are the reference's ``paddle.nn.functional``.
"""
from __future__ import annotations

import numbers

from ..core.errors import ArgTypeError, AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .tensor import _key, cast, split


def _act(op_type, x, name, **attrs):
    return apply_op_single(op_type, {"X": x}, attrs or None, name_key=_key(op_type, name))


def _number(value, what, func):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise located(ArgTypeError, f"{func}(): {what} must be a number, got {value!r}")
    return float(value)


def hardswish(x, name=None):
    """``x * relu6(x + 3) / 6`` (op ``hard_swish``)."""
    return _act("hard_swish", x, name, threshold=6.0, scale=6.0, offset=3.0)


def swish(x, name=None):
    """``x * sigmoid(x)`` (op ``swish`` with beta 1)."""
    return _act("swish", x, name, beta=1.0)


def silu(x, name=None):
    """``x * sigmoid(x)`` (the same op as ``swish``)."""
    return _act("swish", x, name, beta=1.0)


def mish(x, name=None):
    """``x * tanh(softplus(x))``."""
    return _act("mish", x, name, threshold=20.0)


def elu(x, alpha=1.0, name=None):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    return _act("elu", x, name, alpha=_number(alpha, "alpha", "elu"))


def celu(x, alpha=1.0, name=None):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; alpha must not be 0."""
    alpha = _number(alpha, "alpha", "celu")
    if alpha == 0:
        raise ZeroDivisionError("celu(): alpha must not be 0")
    return _act("celu", x, name, alpha=alpha)


def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))``; scale > 1 and alpha >= 0."""
    scale, alpha = _number(scale, "scale", "selu"), _number(alpha, "alpha", "selu")
    if scale <= 1.0 or alpha < 0:
        raise located(AttrError, f"selu(): scale must be > 1 and alpha >= 0, got scale={scale}, alpha={alpha}")
    return _act("selu", x, name, scale=scale, alpha=alpha)


def softplus(x, beta=1, threshold=20, name=None):
    """``log(1 + exp(beta * x)) / beta`` (``x`` where ``beta * x > threshold``)."""
    return _act("softplus", x, name, beta=_number(beta, "beta", "softplus"),
                threshold=_number(threshold, "threshold", "softplus"))


def softsign(x, name=None):
    """``x / (1 + |x|)``."""
    return _act("softsign", x, name)


def softshrink(x, threshold=0.5, name=None):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0."""
    threshold = _number(threshold, "threshold", "softshrink")
    if threshold < 0:
        raise located(AttrError, f"softshrink(): threshold must be >= 0, got {threshold}")
    return _act("softshrink", x, name, **{"lambda": threshold})


def hardshrink(x, threshold=0.5, name=None):
    """``x`` where ``|x| > threshold``, else 0."""
    return _act("hard_shrink", x, name, threshold=_number(threshold, "threshold", "hardshrink"))


def tanhshrink(x, name=None):
    """``x - tanh(x)``."""
    return _act("tanh_shrink", x, name)


def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    """``x`` where ``x > threshold``, else ``value``."""
    return _act("thresholded_relu", x, name, threshold=_number(threshold, "threshold", "thresholded_relu"),
                value=_number(value, "value", "thresholded_relu"))


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    """``clip(slope * x + offset, 0, 1)``."""
    return _act("hard_sigmoid", x, name, slope=_number(slope, "slope", "hardsigmoid"),
                offset=_number(offset, "offset", "hardsigmoid"))


def hardtanh(x, min=-1.0, max=1.0, name=None):  # noqa: A002  (the reference's argument names)
    """``clip(x, min, max)`` (op ``brelu``)."""
    low, high = _number(min, "min", "hardtanh"), _number(max, "max", "hardtanh")
    if low > high:
        raise located(AttrError, f"hardtanh(): min ({low}) must not exceed max ({high})")
    return _act("brelu", x, name, t_min=low, t_max=high)


def relu6(x, name=None):
    """``min(max(x, 0), 6)``."""
    return _act("relu6", x, name, threshold=6.0)


def log_sigmoid(x, name=None):
    """``log(sigmoid(x))``, computed without overflow."""
    return _act("logsigmoid", x, name)


logsigmoid = log_sigmoid


def log_softmax(x, axis=-1, dtype=None, name=None):
    """``x - log(sum(exp(x), axis))``; ``dtype`` casts ``x`` first."""
    if dtype is not None:
        x = cast(x, dtype)
    return _act("log_softmax", x, name, axis=int(axis))


def prelu(x, weight, data_format="NCHW", name=None):
    """``x`` if ``x > 0`` else ``weight * x``: ``weight`` is 1-D with one value or one per channel."""
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise located(AttrError, f"prelu(): unsupported data_format {data_format!r}")
    if len(weight.shape) != 1:
        raise located(ShapeError, f"prelu(): weight must be 1-D, got {fmt_shape(weight.shape)}")
    mode = "all"
    if weight.shape[0] != 1:
        if len(x.shape) < 2:
            raise located(ShapeError, f"prelu(): a per-channel weight needs an input of rank >= 2, got {fmt_shape(x.shape)}")
        channels = x.shape[-1] if data_format in ("NLC", "NHWC", "NDHWC") else x.shape[1]
        if channels >= 0 and channels != weight.shape[0]:
            raise located(ShapeError, f"prelu(): weight has {weight.shape[0]} values, the input has {channels} channels")
        mode = "channel"
    return apply_op_single("prelu", {"X": x, "Alpha": weight}, {"mode": mode, "data_format": data_format},
                           name_key=_key("prelu", name))


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None):
    """Leaky relu with a slope drawn from U(lower, upper) per element while training, and
    ``(lower + upper) / 2`` otherwise."""
    lower, upper = _number(lower, "lower", "rrelu"), _number(upper, "upper", "rrelu")
    if not 0 <= lower <= upper <= 1:
        raise located(AttrError, f"rrelu(): need 0 <= lower <= upper <= 1, got lower={lower}, upper={upper}")
    return apply_op("rrelu", {"X": x}, {"lower": lower, "upper": upper, "is_test": not training},
                    name_key=_key("rrelu", name))["Out"][0]


def glu(x, axis=-1, name=None):
    """Gated linear unit: split ``x`` in two halves ``a, b`` along ``axis``; ``a * sigmoid(b)``."""
    size = x.shape[axis]
    if size >= 0 and size % 2:
        raise located(ShapeError, f"glu(): the size of axis {axis} must be even, got {fmt_shape(x.shape)}")
    key = _key("glu", name)
    a, b = split(x, 2, int(axis), name)
    gate = apply_op_single("sigmoid", {"X": b}, name_key=key)
    return apply_op_single("elementwise_mul", {"X": a, "Y": gate}, name_key=key)


def maxout(x, groups, axis=1, name=None):
    """Channel ``i`` of the output is the max of input channels ``i * groups ... i * groups +
    groups - 1`` (``axis`` 1 for NCHW, -1 or 3 for NHWC)."""
    if len(x.shape) != 4:
        raise located(ShapeError, f"maxout(): the input must be 4-D, got {fmt_shape(x.shape)}")
    if axis not in (1, -1, 3):
        raise located(AttrError, f"maxout(): axis must be 1, -1 or 3, got {axis}")
    axis = 3 if axis == -1 else axis
    channels = x.shape[axis]
    if channels < 0:
        raise located(ShapeError, f"maxout(): the channel dim must be known, got {fmt_shape(x.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0 or channels % groups:
        raise located(AttrError, f"maxout(): groups must be a positive divisor of the channels ({channels}), got {groups!r}")
    dims = [int(d) for d in x.shape]
    shape = [0] + dims[1:axis] + [channels // int(groups), int(groups)] + dims[axis + 1:]
    if shape.count(-1) > 1:
        raise located(ShapeError, f"maxout(): at most one unknown dim besides the batch, got {fmt_shape(x.shape)}")
    key = _key("maxout", name)
    grouped = apply_op("reshape2", {"X": x}, {"shape": shape}, name_key=key)["Out"][0]
    return apply_op_single("reduce_max", {"X": grouped}, {"dim": [axis + 1], "keep_dim": False}, name_key=key)


def softmax2d(x, name=None):
    """Softmax over the channels of a [N, C, H, W] or [C, H, W] input (axis -3)."""
    if len(x.shape) not in (3, 4):
        raise located(ShapeError, f"Softmax2D: the input must be 3-D or 4-D, got {fmt_shape(x.shape)}")
    return apply_op_single("softmax", {"X": x}, {"axis": -3}, name_key=_key("softmax", name))
