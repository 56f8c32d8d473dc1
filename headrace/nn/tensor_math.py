"""``paddle.*`` elementwise math, logic and comparisons (both modes): the unary and binary families
of ``ops/math_unary.py`` / ``ops/math_binary.py``, made from tables so each name is one row.

Binary functions take two tensors of one dtype (broadcast as NumPy does); comparisons and logical
functions give bool tensors.  ``isclose``/``allclose``/``equal_all`` are built from those ops.
"""
from __future__ import annotations

import numbers

from ..ops.apply import apply_op_single
from . import tensor as T

_UNARY = {
    # paddle name: (op type, doc)
    "sin": ("sin", "sine"), "cos": ("cos", "cosine"), "tan": ("tan", "tangent"),
    "asin": ("asin", "arcsine"), "acos": ("acos", "arccosine"), "atan": ("atan", "arctangent"),
    "sinh": ("sinh", "hyperbolic sine"), "cosh": ("cosh", "hyperbolic cosine"),
    "asinh": ("asinh", "inverse hyperbolic sine"), "acosh": ("acosh", "inverse hyperbolic cosine"),
    "atanh": ("atanh", "inverse hyperbolic tangent"), "erf": ("erf", "error function"),
    "erfinv": ("erfinv", "inverse error function"), "lgamma": ("lgamma", "log |Gamma(x)|"),
    "gammaln": ("lgamma", "log |Gamma(x)|"), "digamma": ("digamma", "digamma (psi) function"),
    "log1p": ("log1p", "ln(1 + x)"), "expm1": ("expm1", "e ** x - 1"), "log2": ("log2", "base-2 logarithm"),
    "log10": ("log10", "base-10 logarithm"), "rsqrt": ("rsqrt", "1 / sqrt(x)"),
    "reciprocal": ("reciprocal", "1 / x"), "floor": ("floor", "floor (zero gradient)"),
    "ceil": ("ceil", "ceiling (zero gradient)"), "trunc": ("trunc", "rounding toward zero (zero gradient)"),
    "frac": ("frac", "x - trunc(x)"), "neg": ("neg", "-x"), "negative": ("neg", "-x"),
    "sign": ("sign", "the sign (-1, 0, 1)"), "sgn": ("sign", "the sign (-1, 0, 1)"),
    "isnan": ("isnan_v2", "whether x is NaN (bool)"), "isinf": ("isinf_v2", "whether x is +-inf (bool)"),
    "isfinite": ("isfinite_v2", "whether x is finite (bool)"), "signbit": ("signbit", "whether the sign bit is set"),
    "logical_not": ("logical_not", "not x (bool)"), "bitwise_not": ("bitwise_not", "~x"),
    "bitwise_invert": ("bitwise_not", "~x"),
    "i0": ("i0", "modified Bessel function I0"), "i0e": ("i0e", "exp(-|x|) I0(x)"),
    "i1": ("i1", "modified Bessel function I1"), "i1e": ("i1e", "exp(-|x|) I1(x)"),
}

_BINARY = {
    "atan2": ("atan2", "atan2(x, y)"), "hypot": ("hypot", "sqrt(x**2 + y**2)"),
    "logaddexp": ("logaddexp", "log(exp(x) + exp(y))"), "fmax": ("elementwise_fmax", "max ignoring NaN"),
    "fmin": ("elementwise_fmin", "min ignoring NaN"), "floor_divide": ("elementwise_floordiv", "floor(x / y)"),
    "remainder": ("elementwise_mod", "x mod y (the sign of y)"), "mod": ("elementwise_mod", "x mod y"),
    "floor_mod": ("elementwise_mod", "x mod y"), "copysign": ("copysign", "|x| with the sign of y"),
    "heaviside": ("heaviside", "the Heaviside step of x, y at 0"),
    "logical_and": ("logical_and", "x and y (bool)"), "logical_or": ("logical_or", "x or y (bool)"),
    "logical_xor": ("logical_xor", "x xor y (bool)"), "bitwise_and": ("bitwise_and", "x & y"),
    "bitwise_or": ("bitwise_or", "x | y"), "bitwise_xor": ("bitwise_xor", "x ^ y"),
    "gcd": ("gcd", "greatest common divisor"), "lcm": ("lcm", "least common multiple"),
    "nextafter": ("nextafter", "the next float after x toward y"),
    "bitwise_left_shift": ("bitwise_left_shift", "x << y"), "bitwise_right_shift": ("bitwise_right_shift", "x >> y"),
    "equal": ("equal", "x == y (bool)"), "eq": ("equal", "x == y (bool)"),
    "not_equal": ("not_equal", "x != y (bool)"), "ne": ("not_equal", "x != y (bool)"),
    "less_than": ("less_than", "x < y (bool)"), "less": ("less_than", "x < y (bool)"),
    "lt": ("less_than", "x < y (bool)"), "less_equal": ("less_equal", "x <= y (bool)"),
    "le": ("less_equal", "x <= y (bool)"), "greater_than": ("greater_than", "x > y (bool)"),
    "greater": ("greater_than", "x > y (bool)"), "gt": ("greater_than", "x > y (bool)"),
    "greater_equal": ("greater_equal", "x >= y (bool)"), "ge": ("greater_equal", "x >= y (bool)"),
    "div": ("elementwise_div", "x / y"), "true_divide": ("elementwise_div", "x / y"),
    "sub": ("elementwise_sub", "x - y"), "mul": ("elementwise_mul", "x * y"),
}


def _make_unary(name, op_type, doc):
    def fn(x, name=None):
        return apply_op_single(op_type, {"X": x}, name_key=T._key(op_type, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``paddle.{name}(x)``: the elementwise {doc} (op ``{op_type}``)."
    return fn


def _make_binary(name, op_type, doc):
    def fn(x, y, name=None):
        y = _operand(x, y)
        x = _operand(y, x)
        return apply_op_single(op_type, {"X": x, "Y": y}, {"axis": -1}, name_key=T._key(op_type, name))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``paddle.{name}(x, y)``: the elementwise {doc}, broadcast (op ``{op_type}``)."
    return fn


def _operand(like, value):
    """A Python number next to a tensor becomes a constant of the tensor's dtype."""
    if isinstance(value, (numbers.Number,)) and not isinstance(value, bool) and hasattr(like, "dtype"):
        return T.full([], value, like.dtype)
    return value


_F = {name: _make_unary(name, op, doc) for name, (op, doc) in _UNARY.items()}
_F.update({name: _make_binary(name, op, doc) for name, (op, doc) in _BINARY.items()})
globals().update(_F)


def round(x, decimals=0, name=None):  # noqa: A001
    """``paddle.round(x, decimals=0)``: halves away from zero (op ``round``); ``decimals`` scales
    by 10**decimals first.  The gradient is zero."""
    if decimals:
        scaled = T.scale(x, 10.0 ** decimals)
        return T.scale(apply_op_single("round", {"X": scaled}, name_key=T._key("round", name)), 10.0 ** -decimals)
    return apply_op_single("round", {"X": x}, name_key=T._key("round", name))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    """``paddle.nan_to_num``: NaN, +inf, -inf replaced (default 0 and the dtype's extremes)."""
    attrs = {"nan": float(nan), "posinf": None if posinf is None else float(posinf),
             "neginf": None if neginf is None else float(neginf)}
    return apply_op_single("nan_to_num", {"X": x}, attrs, name_key=T._key("nan_to_num", name))


def deg2rad(x, name=None):
    """Degrees to radians: ``x * pi / 180``."""
    return T.scale(x, 3.141592653589793 / 180.0)


def rad2deg(x, name=None):
    """Radians to degrees: ``x * 180 / pi``."""
    return T.scale(x, 180.0 / 3.141592653589793)


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """``scale_b * tanh(scale_a * x)``."""
    from . import functional as F
    return T.scale(F.tanh(T.scale(x, scale_a)), scale_b)


def logit(x, eps=None, name=None):
    """``log(x / (1 - x))``, x clipped to [eps, 1 - eps] first when ``eps`` is given."""
    from . import functional as F
    if eps is not None:
        x = apply_op_single("clip", {"X": x}, {"min": float(eps), "max": 1.0 - float(eps)}, name_key=T._key("clip"))
    return F.log(T.divide(x, T.scale(x, -1.0, 1.0)))


def isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """``|x - y| <= atol + rtol * |y|`` elementwise (bool; equal infinities are close; NaN is close
    to NaN only with ``equal_nan``), as the reference."""
    from . import functional as F
    diff = F.abs(T.subtract(x, y))
    bound = T.scale(F.abs(y), float(rtol), float(atol))
    out = _F["logical_or"](_F["equal"](x, y), _F["less_equal"](diff, bound))
    if equal_nan:
        out = _F["logical_or"](out, _F["logical_and"](_F["isnan"](x), _F["isnan"](y)))
    return out


def allclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Whether every element of x is close to y (``isclose``), a bool 0-D tensor."""
    return all_(isclose(x, y, rtol, atol, equal_nan))


def equal_all(x, y, name=None):
    """Whether x and y have one shape and equal elements (a bool 0-D tensor)."""
    if list(x.shape) != list(y.shape):
        return T.full([], False, "bool")
    return all_(_F["equal"](x, y))


def all_(x, axis=None, keepdim=False):
    return T._reduce("reduce_all", x, axis, keepdim, "all")


__all__ = sorted(list(_UNARY) + list(_BINARY) + ["round", "nan_to_num", "deg2rad", "rad2deg", "stanh", "logit",
                                                  "isclose", "allclose", "equal_all"])
