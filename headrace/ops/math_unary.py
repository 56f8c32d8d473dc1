"""Elementwise math of one tensor, table-driven: each row of ``_UNARY`` is one op (X -> Out of X's
shape and dtype) with its derivative, registered with its ``<type>_grad`` op.

A row is ``(type, forward, (reads, derivative) | ZERO, dtypes, doc)``: ``forward(x)`` computes
Out; the gradient op reads ``reads`` (the forward slot "X" or "Out") and ``Out@GRAD`` and
``derivative(value, dout)`` gives ``X@GRAD``.  ``ZERO`` marks a piecewise-constant function
(floor, ceil, round, trunc) whose gradient is zero everywhere, as in the reference.  Rows of
``_PREDICATES`` give a bool tensor and have no gradient (``NO_GRADIENT``).

Semantics follow the reference: ``round`` rounds halves away from zero (not NumPy's half to even),
``rsqrt(x) = 1 / sqrt(x)``, ``reciprocal(x) = 1 / x``, ``frac(x) = x - trunc(x)``.  Special
functions without a NumPy ufunc (``erf``, ``erfinv``, ``lgamma``, ``digamma``, ``i0``/``i0e``/``i1``/``i1e``
from ``ops/bessel.py``) are computed in
float64 and rounded once to the input's dtype.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import bool_, float32, float64, int8, int16, int32, int64, uint8
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .registry import register
from .bessel import i0, i0e, i1, i1e
from .special import erf

FLOATS = (float32, float64)
INTS = (int8, int16, int32, int64, uint8)
NUMBERS = FLOATS + INTS
DX, DOUT = grad_slot("X"), grad_slot("Out")
ZERO = "zero-gradient"


def _in_dtype(fn):
    """``fn`` evaluated in float64 and rounded once to the input's dtype."""
    def forward(x):
        return np.asarray(fn(x.astype(np.float64, copy=False))).astype(x.dtype, copy=False)
    return forward


# --- special functions (float64) ---------------------------------------------------------------
_lgamma_scalar = np.frompyfunc(math.lgamma, 1, 1)


def lgamma(x):
    """log|Gamma(x)|, elementwise (math.lgamma; +inf at the poles 0, -1, -2, ...)."""
    x = np.asarray(x, dtype=np.float64)
    poles = (x <= 0) & (x == np.floor(x))
    safe = np.where(poles, 1.0, x)
    out = np.asarray(_lgamma_scalar(safe), dtype=np.float64)
    return np.where(poles, np.inf, out)


def _shifted(x, order):
    """(x shifted up to >= 6 by the recurrence, the recurrence's correction) for polygamma ``order``."""
    x = np.array(x, dtype=np.float64, copy=True)
    correction = np.zeros_like(x)
    for _ in range(6):
        small = x < 6
        if not small.any():
            break
        term = 1.0 / x if order == 0 else 1.0 / (x * x)
        correction = correction - np.where(small, term, 0.0)
        x = np.where(small, x + 1, x)
    return x, correction


def digamma(x):
    """psi(x) = d/dx lgamma(x): reflection for x < 0.5, the recurrence up to x >= 6, then the
    asymptotic series (error below 1e-15); NaN at the poles."""
    x = np.asarray(x, dtype=np.float64)
    reflect = x < 0.5
    y = np.where(reflect, 1.0 - x, x)
    z, correction = _shifted(y, 0)
    inv2 = 1.0 / (z * z)
    series = np.log(z) - 0.5 / z - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 / 132))))
    psi = series + correction
    with np.errstate(divide="ignore", invalid="ignore"):
        reflected = psi - np.pi / np.tan(np.pi * x)
    out = np.where(reflect, reflected, psi)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, out)


def trigamma(x):
    """psi'(x) for x > 0 (recurrence + asymptotic series); reflection for x <= 0."""
    x = np.asarray(x, dtype=np.float64)
    reflect = x < 0.5
    y = np.where(reflect, 1.0 - x, x)
    z, correction = _shifted(y, 1)
    inv = 1.0 / z
    inv2 = inv * inv
    series = inv + inv2 / 2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))
    psi1 = series - correction
    with np.errstate(divide="ignore", invalid="ignore"):
        reflected = (np.pi / np.sin(np.pi * x)) ** 2 - psi1
    return np.where(reflect, reflected, psi1)


def erfinv(y):
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside): a start from the logarithmic
    approximation, then Newton steps on erf in float64."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 0.147
        ln = np.log1p(-y * y)
        t = 2 / (np.pi * a) + ln / 2
        x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
        inside = np.abs(y) < 1
        x = np.where(inside, x, 0.0)
        for _ in range(4):
            x = x - (erf(x) - y) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
            x = np.where(inside, x, 0.0)
    out = np.where(np.abs(y) == 1, np.sign(y) * np.inf, x)
    return np.where(np.abs(y) > 1, np.nan, out)


def _round_half_away(x):
    """Halves away from zero (the reference's std::round), exact: trunc + sign * (|frac| >= 0.5)."""
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= 0.5)


def _safe_x(x):
    x = x.astype(np.float64, copy=False)
    return x, np.where(x == 0, 1.0, x)


def _i1_slope(x):
    """d I1 / dx = I0 - I1 / x (1/2 at 0)."""
    x, nz = _safe_x(x)
    return np.where(x == 0, 0.5, i0(x) - i1(x) / nz)


def _i1e_slope(x):
    """d i1e / dx = i0e - i1e / x - sign(x) i1e (1/2 at 0)."""
    x, nz = _safe_x(x)
    e = i1e(x)
    return np.where(x == 0, 0.5, i0e(x) - e / nz - np.sign(x) * e)


def _cast_like(value, x):
    return np.asarray(value).astype(x.dtype, copy=False)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# type: (forward, (reads, derivative(value, dout)) | ZERO, dtypes, doc)
_UNARY = {
    "sin": (np.sin, ("X", lambda x, d: d * np.cos(x)), FLOATS, "Out = sin(X)"),
    "cos": (np.cos, ("X", lambda x, d: -d * np.sin(x)), FLOATS, "Out = cos(X)"),
    "tan": (np.tan, ("Out", lambda o, d: d * (1 + o * o)), FLOATS, "Out = tan(X)"),
    "asin": (np.arcsin, ("X", lambda x, d: d / np.sqrt(1 - x * x)), FLOATS, "Out = arcsin(X)"),
    "acos": (np.arccos, ("X", lambda x, d: -d / np.sqrt(1 - x * x)), FLOATS, "Out = arccos(X)"),
    "atan": (np.arctan, ("X", lambda x, d: d / (1 + x * x)), FLOATS, "Out = arctan(X)"),
    "sinh": (np.sinh, ("X", lambda x, d: d * np.cosh(x)), FLOATS, "Out = sinh(X)"),
    "cosh": (np.cosh, ("X", lambda x, d: d * np.sinh(x)), FLOATS, "Out = cosh(X)"),
    "asinh": (np.arcsinh, ("X", lambda x, d: d / np.sqrt(x * x + 1)), FLOATS, "Out = arcsinh(X)"),
    "acosh": (np.arccosh, ("X", lambda x, d: d / np.sqrt(x * x - 1)), FLOATS, "Out = arccosh(X)"),
    "atanh": (np.arctanh, ("X", lambda x, d: d / (1 - x * x)), FLOATS, "Out = arctanh(X)"),
    "erf": (_in_dtype(erf), ("X", lambda x, d: d * _TWO_OVER_SQRT_PI * np.exp(-x * x)), FLOATS,
            "Out = erf(X)"),
    "erfinv": (_in_dtype(erfinv), ("Out", lambda o, d: d * (math.sqrt(math.pi) / 2) * np.exp(o * o)), FLOATS,
               "Out = erf^-1(X) on [-1, 1]"),
    "lgamma": (_in_dtype(lgamma), ("X", lambda x, d: d * digamma(x).astype(x.dtype)), FLOATS,
               "Out = log|Gamma(X)|"),
    "digamma": (_in_dtype(digamma), ("X", lambda x, d: d * trigamma(x).astype(x.dtype)), FLOATS,
                "Out = psi(X) = d lgamma(X) / dX"),
    "log1p": (np.log1p, ("X", lambda x, d: d / (1 + x)), FLOATS, "Out = ln(1 + X)"),
    "expm1": (np.expm1, ("Out", lambda o, d: d * (o + 1)), FLOATS, "Out = e ** X - 1"),
    "log2": (np.log2, ("X", lambda x, d: d / (x * x.dtype.type(_LN2))), FLOATS, "Out = log2(X)"),
    "log10": (np.log10, ("X", lambda x, d: d / (x * x.dtype.type(_LN10))), FLOATS, "Out = log10(X)"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), ("Out", lambda o, d: -0.5 * d * o * o * o), FLOATS, "Out = 1 / sqrt(X)"),
    "reciprocal": (lambda x: 1 / x, ("Out", lambda o, d: -d * o * o), FLOATS, "Out = 1 / X"),
    "floor": (np.floor, ZERO, FLOATS, "Out = floor(X); the gradient is zero"),
    "ceil": (np.ceil, ZERO, FLOATS, "Out = ceil(X); the gradient is zero"),
    "round": (_round_half_away, ZERO, FLOATS, "Out = X rounded, halves away from zero; the gradient is zero"),
    "trunc": (np.trunc, ZERO, NUMBERS, "Out = X rounded toward zero; the gradient is zero"),
    "frac": (lambda x: x - np.trunc(x), ("X", lambda x, d: d.copy()), FLOATS, "Out = X - trunc(X)"),
    "neg": (np.negative, ("X", lambda x, d: -d), NUMBERS, "Out = -X"),
    "i0": (_in_dtype(i0), ("X", lambda x, d: d * _cast_like(i1(x), x)), FLOATS,
           "Out = I0(X), the modified Bessel function of order 0"),
    "i0e": (_in_dtype(i0e), ("X", lambda x, d: d * _cast_like(i1e(x) - np.sign(x) * i0e(x), x)), FLOATS,
            "Out = exp(-|X|) I0(X)"),
    "i1": (_in_dtype(i1), ("X", lambda x, d: d * _cast_like(_i1_slope(x), x)), FLOATS,
           "Out = I1(X), the modified Bessel function of order 1"),
    "i1e": (_in_dtype(i1e), ("X", lambda x, d: d * _cast_like(_i1e_slope(x), x)), FLOATS,
            "Out = exp(-|X|) I1(X)"),
}


def _infer_same(allowed):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        ctx.set("Out", ctx.shape("X"), dtype)
    return infer


def _kernel(fn):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.asarray(fn(x))
        return {"Out": out.astype(x.dtype, copy=False)}
    return kernel


def _grad_kernel(op_type, reads, derivative):
    def kernel(ins, attrs, ctx):
        if DX not in ctx.wanted:
            return {}
        value, dout = ins[reads], ins[DOUT]
        if value.dtype.kind != "f":
            raise TypeError(f"op `{op_type}_grad`: gradients exist for floating-point inputs only, "
                            f"got `{reads}` of dtype {value.dtype}")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dx = np.asarray(derivative(value, dout))
        return {DX: dx.astype(value.dtype, copy=False)}
    return kernel


def _zero_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    return {DX: np.zeros_like(ins[DOUT])}


def _gradient(op_type, grad):
    if grad is ZERO:
        return Gradient(_zero_grad_kernel, inputs=(), like={DX: DOUT}, attrs=False)
    reads, derivative = grad
    return Gradient(_grad_kernel(op_type, reads, derivative), inputs=("X",) if reads == "X" else (),
                    outputs=("Out",) if reads == "Out" else (), like={DX: reads}, attrs=False)


for _type, (_fn, _grad, _allowed, _doc) in _UNARY.items():
    register(_type, inputs=["X"], outputs=["Out"], infer=_infer_same(_allowed), kernel=_kernel(_fn),
             grad=_gradient(_type, _grad), doc=_doc)


# --- predicates and bitwise negation: no gradient ------------------------------------------------
def _infer_predicate(allowed, out_dtype):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        ctx.set("Out", ctx.shape("X"), out_dtype or dtype)
    return infer


_PREDICATES = {
    "isnan_v2": (np.isnan, NUMBERS, bool_, "Out = X is NaN"),
    "isinf_v2": (np.isinf, NUMBERS, bool_, "Out = X is +-inf"),
    "isfinite_v2": (np.isfinite, NUMBERS, bool_, "Out = X is neither inf nor NaN"),
    "signbit": (np.signbit, NUMBERS, bool_, "Out = the sign bit of X is set (True for -0.0)"),
    "logical_not": (np.logical_not, NUMBERS + (bool_,), bool_, "Out = not X (nonzero is True)"),
    "bitwise_not": (np.invert, INTS + (bool_,), None, "Out = ~X (bitwise; logical for bool)"),
}

for _type, (_fn, _allowed, _out, _doc) in _PREDICATES.items():
    register(_type, inputs=["X"], outputs=["Out"], infer=_infer_predicate(_allowed, _out),
             kernel=lambda ins, attrs, ctx, fn=_fn: {"Out": np.asarray(fn(ins["X"]))}, grad=NO_GRADIENT,
             doc=_doc)


# --- nan_to_num ----------------------------------------------------------------------------------
def _nan_to_num_kernel(ins, attrs, ctx):
    x = ins["X"]
    info = np.finfo(x.dtype)
    posinf = info.max if attrs["posinf"] is None else attrs["posinf"]
    neginf = info.min if attrs["neginf"] is None else attrs["neginf"]
    return {"Out": np.nan_to_num(x, nan=attrs["nan"], posinf=posinf, neginf=neginf)}


register("nan_to_num", inputs=["X"], outputs=["Out"], attrs={"nan": 0.0, "posinf": None, "neginf": None},
         infer=_infer_same(FLOATS), kernel=_nan_to_num_kernel,
         grad=Gradient(_grad_kernel("nan_to_num", "X", lambda x, d: d * np.isfinite(x)), inputs=("X",),
                       attrs=False),
         doc="Out = X with NaN, +inf, -inf replaced (by default 0 and the dtype's largest/smallest value); "
             "the gradient passes where X is finite")
