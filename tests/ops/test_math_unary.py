"""The unary math family (ops/math_unary.py): each op against a reference written with the math
module one element at a time, shape inference with an unknown batch, float64 gradient checks
against central differences, and the same results and gradients in eager mode."""
import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from headrace.core.errors import DTypeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(3)


def _digamma(v):
    h = 1e-5   # the derivative of lgamma by central differences (error ~1e-10)
    return (math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h)


def _trigamma_free_erfinv(y):
    lo, hi = -6.0, 6.0     # bisection on math.erf
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _round_half_away(v):
    # Decimal(v) is the exact binary value; ROUND_HALF_UP rounds ties away from zero
    return float(Decimal(v).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _bessel(order, scaled):
    """I_order(v) by the integral (1/pi) int_0^pi exp(v cos t) cos(order t) dt, trapezoid rule on
    2000 points (exponentially accurate for this periodic integrand); ``scaled``: times exp(-|v|)."""
    def ref(v):
        n = 2000
        total = math.fsum(math.exp(v * math.cos(math.pi * j / n) - (abs(v) if scaled else 0.0))
                          * math.cos(order * math.pi * j / n) * (0.5 if j in (0, n) else 1.0) for j in range(n + 1))
        return total / n
    return ref


# op: (scalar reference, (low, high) of the inputs, rtol)
REFS = {
    "sin": (math.sin, (-3, 3), 1e-13), "cos": (math.cos, (-3, 3), 1e-13), "tan": (math.tan, (-1.2, 1.2), 1e-13),
    "asin": (math.asin, (-0.9, 0.9), 1e-13), "acos": (math.acos, (-0.9, 0.9), 1e-13),
    "atan": (math.atan, (-3, 3), 1e-13), "sinh": (math.sinh, (-3, 3), 1e-13), "cosh": (math.cosh, (-3, 3), 1e-13),
    "asinh": (math.asinh, (-3, 3), 1e-13), "acosh": (math.acosh, (1.2, 4), 1e-13),
    "atanh": (math.atanh, (-0.9, 0.9), 1e-13), "erf": (math.erf, (-3, 3), 1e-13),
    "erfinv": (_trigamma_free_erfinv, (-0.95, 0.95), 1e-10), "lgamma": (math.lgamma, (0.2, 6), 1e-12),
    "digamma": (_digamma, (0.3, 6), 1e-7), "log1p": (math.log1p, (-0.5, 3), 1e-13),
    "expm1": (math.expm1, (-2, 2), 1e-13), "log2": (math.log2, (0.1, 5), 1e-13),
    "log10": (math.log10, (0.1, 5), 1e-13), "rsqrt": (lambda v: 1 / math.sqrt(v), (0.2, 5), 1e-13),
    "reciprocal": (lambda v: 1 / v, (0.5, 3), 1e-13), "floor": (math.floor, (-3, 3), 0),
    "ceil": (math.ceil, (-3, 3), 0), "round": (_round_half_away, (-3, 3), 0), "trunc": (math.trunc, (-3, 3), 0),
    "frac": (lambda v: v - math.trunc(v), (-3, 3), 1e-13), "neg": (lambda v: -v, (-3, 3), 0),
    "i0": (_bessel(0, False), (-4, 4), 1e-12), "i0e": (_bessel(0, True), (-4, 4), 1e-12),
    "i1": (_bessel(1, False), (-4, 4), 1e-12), "i1e": (_bessel(1, True), (-4, 4), 1e-12),
}


def _reference(fn):
    def reference(ins, attrs):
        x = ins["X"]
        return {"Out": np.array([fn(float(v)) for v in x.ravel()], dtype=np.float64).reshape(x.shape).astype(x.dtype)}
    return reference


def _input(op, shape, dtype="float64"):
    low, high = REFS[op][1]
    return rng.uniform(low, high, shape).astype(dtype)


CASES = [Case(op, {"X": _input(op, shape)}, _reference(REFS[op][0]), rtol=REFS[op][2], atol=1e-12,
              id=f"{op}-{shape}") for op in REFS for shape in [(3, 4), (5,), ()]]
CASES += [Case(op, {"X": _input(op, (2, 3), "float32")}, _reference(REFS[op][0]), rtol=max(REFS[op][2], 2e-6),
               atol=1e-6, id=f"{op}-float32") for op in REFS]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.inputs["X"].ndim == 2], ids=str)
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_round_halves_go_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, -1.2], dtype=np.float64)
    case = Case("round", {"X": x}, lambda ins, attrs: {"Out": np.array([1, 2, 3, -1, -3, 0, -1], dtype=np.float64)})
    check_forward(case)


@pytest.mark.parametrize("op", ["i0", "i0e", "i1", "i1e"])
def test_bessel_for_large_arguments(op):
    x = np.array([-60.0, -25.5, 0.0, 1e-3, 30.0, 80.0])
    order, scaled = int(op[1]), op.endswith("e")
    want = np.array([_bessel(order, scaled)(v) for v in x])
    check_forward(Case(op, {"X": x}, lambda ins, attrs: {"Out": want}, rtol=1e-12, atol=1e-15))


def test_special_values():
    x = np.array([-1.0, 1.0, 0.0, 1.5], dtype=np.float64)
    out = Case("erfinv", {"X": x}, lambda ins, attrs: {"Out": np.array([-np.inf, np.inf, 0.0, np.nan])})
    check_forward(out)
    poles = Case("lgamma", {"X": np.array([0.0, -1.0, -2.5])},
                 lambda ins, attrs: {"Out": np.array([np.inf, np.inf, math.lgamma(-2.5)])}, rtol=1e-12)
    check_forward(poles)


GRAD_OPS = [op for op in REFS if op not in ("floor", "ceil", "round", "trunc")]


@pytest.mark.parametrize("op", GRAD_OPS)
def test_gradient_matches_finite_differences(op):
    check_grad(op, {"X": _input(op, (3, 4))}, rtol=1e-5 if op in ("digamma", "lgamma", "erfinv") else 1e-6)


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc"])
def test_piecewise_constant_ops_have_zero_gradient(op):
    x = rng.uniform(-3, 3, (3, 4))
    x = x + 0.25 * (np.abs(x - np.round(x)) < 0.1)   # keep away from the jumps
    check_grad(op, {"X": x})


@pytest.mark.parametrize("op", list(REFS))
def test_eager_matches_static(op):
    check_both_modes(op, {"X": _input(op, (2, 3))})


PREDICATES = {
    "isnan_v2": np.isnan, "isinf_v2": np.isinf, "isfinite_v2": np.isfinite, "signbit": np.signbit,
    "logical_not": np.logical_not,
}


@pytest.mark.parametrize("op", list(PREDICATES))
def test_predicates(op):
    x = np.array([[0.0, -0.0, np.nan, np.inf], [-np.inf, 1.5, -2.0, 3.0]])
    fns = {"isnan_v2": lambda v: v != v, "isinf_v2": lambda v: abs(v) == math.inf,
           "isfinite_v2": lambda v: math.isfinite(v), "signbit": lambda v: math.copysign(1, v) < 0,
           "logical_not": lambda v: v == 0}
    ref = np.array([fns[op](float(v)) for v in x.ravel()]).reshape(x.shape)
    check_forward(Case(op, {"X": x}, lambda ins, attrs: {"Out": ref}))
    check_both_modes(op, {"X": x})


def test_bitwise_not_and_nan_to_num():
    x = np.array([0, 5, -3], dtype=np.int32)
    check_forward(Case("bitwise_not", {"X": x}, lambda ins, attrs: {"Out": np.array([-1, -6, 2], np.int32)}))
    v = np.array([np.nan, np.inf, -np.inf, 2.0])
    big = np.finfo(np.float64).max
    check_forward(Case("nan_to_num", {"X": v}, lambda ins, attrs: {"Out": np.array([0.0, big, -big, 2.0])}))
    check_forward(Case("nan_to_num", {"X": v}, lambda ins, attrs: {"Out": np.array([1.0, 9.0, -9.0, 2.0])},
                       attrs={"nan": 1.0, "posinf": 9.0, "neginf": -9.0}))
    check_grad("nan_to_num", {"X": rng.standard_normal((2, 3))})


def test_integer_input_to_a_float_op_is_a_dtype_error():
    check_build_error("sin", {"X": np.zeros(3, np.int64)}, {}, DTypeError, match="dtype")
