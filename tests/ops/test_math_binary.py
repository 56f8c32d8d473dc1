"""The binary math family (ops/math_binary.py): references written with the math module per
element pair (broadcast by hand), gradient checks with broadcasting, both modes, and errors."""
import math

import numpy as np
import pytest

from headrace.core.errors import DTypeError, ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(5)


def _pairwise(fn, out_dtype=None):
    """A reference applying ``fn(a, b)`` to every broadcast pair, indices worked out by hand."""
    def reference(ins, attrs):
        x, y = ins["X"], ins["Y"]
        rank = max(x.ndim, y.ndim)
        xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
        shape = tuple(max(a, b) for a, b in zip(xs, ys))
        xr, yr = x.reshape(xs), y.reshape(ys)
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            a = xr[tuple(i if d > 1 else 0 for i, d in zip(idx, xs))]
            b = yr[tuple(i if d > 1 else 0 for i, d in zip(idx, ys))]
            out[idx] = fn(a.item(), b.item())
        return {"Out": out.astype(out_dtype or x.dtype)}
    return reference


def _pymod(a, b):
    return a - math.floor(a / b) * b if isinstance(a, float) else a % b


def _heaviside(a, b):
    return 0.0 if a < 0 else (b if a == 0 else 1.0)


# op: (reference, X range, Y range, differentiable)
FLOAT_REFS = {
    "atan2": (math.atan2, (-2, 2), (-2, 2), True),
    "hypot": (math.hypot, (-2, 2), (-2, 2), True),
    "logaddexp": (lambda a, b: max(a, b) + math.log1p(math.exp(-abs(a - b))), (-3, 3), (-3, 3), True),
    "elementwise_fmax": (max, (-2, 2), (-2, 2), True),
    "elementwise_fmin": (min, (-2, 2), (-2, 2), True),
    "elementwise_mod": (_pymod, (-5, 5), (0.5, 2), True),
    "copysign": (math.copysign, (-2, 2), (-2, 2), True),
    "heaviside": (_heaviside, (-2, 2), (-2, 2), True),
    "elementwise_floordiv": (lambda a, b: float(math.floor(a / b)), (-5, 5), (0.5, 2), False),
    "nextafter": (math.nextafter, (-2, 2), (-2, 2), False),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2,))]


def _pair(op, xs, ys, dtype="float64"):
    _, xr, yr, _ = FLOAT_REFS[op]
    return {"X": rng.uniform(*xr, xs).astype(dtype), "Y": rng.uniform(*yr, ys).astype(dtype)}


CASES = [Case(op, _pair(op, xs, ys), _pairwise(FLOAT_REFS[op][0]), rtol=1e-13, atol=1e-15, id=f"{op}-{xs}-{ys}")
         for op in FLOAT_REFS for xs, ys in SHAPES]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.inputs["X"].ndim == 2 and c.inputs["Y"].ndim == 2], ids=str)
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


@pytest.mark.parametrize("op", [op for op, ref in FLOAT_REFS.items() if ref[3]])
@pytest.mark.parametrize("xs, ys", [((3, 4), (3, 4)), ((3, 4), (4,))])
def test_gradient_matches_finite_differences(op, xs, ys):
    inputs = _pair(op, xs, ys)
    if op == "elementwise_mod":   # keep X / Y away from integers (where mod jumps)
        q = inputs["X"] / inputs["Y"]
        inputs["X"] = inputs["X"] + 0.3 * inputs["Y"] * (np.abs(q - np.round(q)) < 0.15)
    check_grad(op, inputs)
    if op == "heaviside":   # dY is nonzero only where X == 0 (where X's own difference quotient jumps)
        inputs["X"][0, 0] = 0.0
        check_grad(op, inputs, wrt=("Y",))


@pytest.mark.parametrize("op", list(FLOAT_REFS))
def test_eager_matches_static(op):
    check_both_modes(op, _pair(op, (2, 3), (3,)))


INT_REFS = {
    "elementwise_floordiv": lambda a, b: a // b, "elementwise_mod": lambda a, b: a % b,
    "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b, "bitwise_xor": lambda a, b: a ^ b,
    "gcd": math.gcd, "lcm": lambda a, b: abs(a * b) // math.gcd(a, b) if a and b else 0,
    "elementwise_fmax": max, "elementwise_fmin": min,
}


@pytest.mark.parametrize("op", list(INT_REFS))
def test_integer_ops(op):
    x = rng.integers(-20, 20, (3, 4)).astype(np.int64)
    y = rng.integers(1, 7, (4,)).astype(np.int64) * rng.choice([-1, 1], 4)
    check_forward(Case(op, {"X": x, "Y": y}, _pairwise(INT_REFS[op])))
    check_both_modes(op, {"X": x, "Y": y})


@pytest.mark.parametrize("op, fn", [("logical_and", lambda a, b: bool(a) and bool(b)),
                                    ("logical_or", lambda a, b: bool(a) or bool(b)),
                                    ("logical_xor", lambda a, b: bool(a) != bool(b))])
def test_logical_ops_take_any_dtype_and_give_bool(op, fn):
    for dtype in ("bool", "int32", "float32"):
        x = rng.integers(0, 2, (3, 4)).astype(dtype)
        y = rng.integers(0, 2, (4,)).astype(dtype)
        check_forward(Case(op, {"X": x, "Y": y}, _pairwise(fn, np.bool_)))
        check_both_modes(op, {"X": x, "Y": y})


def test_fmax_ignores_nan_and_mod_takes_the_divisor_sign():
    x, y = np.array([np.nan, 1.0, 3.0]), np.array([2.0, np.nan, 1.0])
    check_forward(Case("elementwise_fmax", {"X": x, "Y": y}, lambda i, a: {"Out": np.array([2.0, 1.0, 3.0])}))
    a, b = np.array([-7, 7, -7], np.int64), np.array([3, -3, -3], np.int64)
    check_forward(Case("elementwise_mod", {"X": a, "Y": b}, lambda i, at: {"Out": np.array([2, -2, -1], np.int64)}))
    check_forward(Case("elementwise_floordiv", {"X": a, "Y": b},
                       lambda i, at: {"Out": np.array([-3, -3, 2], np.int64)}))


def test_integer_division_by_zero_raises():
    from tests.ops.harness import build_and_run
    case = Case("elementwise_floordiv", {"X": np.array([1, 2], np.int64), "Y": np.array([1, 0], np.int64)},
                lambda i, a: {})
    with pytest.raises(ZeroDivisionError):
        build_and_run(case)


def test_errors_name_the_op():
    check_build_error("atan2", {"X": np.zeros((2, 3)), "Y": np.zeros((4,))}, {}, ShapeError)
    check_build_error("hypot", {"X": np.zeros(3), "Y": np.zeros(3, np.float32)}, {}, DTypeError)
    check_build_error("gcd", {"X": np.zeros(3), "Y": np.zeros(3)}, {}, DTypeError)
