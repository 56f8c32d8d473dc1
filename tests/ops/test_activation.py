"""Activation ops: references written with the math module, one element (or one slice) at a time."""
import dataclasses
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError
from headrace.ops.registry import lookup
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(1)


def _elementwise(fn):
    """A reference applying the scalar function ``fn(v, attrs)`` to every element, in float64."""
    def reference(ins, attrs):
        x = ins["X"]
        values = [fn(float(v), attrs) for v in x.ravel()]
        return {"Out": np.array(values, dtype=np.float64).reshape(x.shape).astype(x.dtype)}
    return reference


def _sigmoid(v, attrs):
    # log-space form: sigmoid(v) = exp(-log(1 + exp(-v))), written for each sign without overflow
    if v >= 0:
        return math.exp(-math.log1p(math.exp(-v)))
    return math.exp(v - math.log1p(math.exp(v)))


def _gelu(v, attrs):
    if attrs.get("approximate", False):
        return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    return 0.5 * v * math.erfc(-v / math.sqrt(2.0))   # = v * Phi(v)


SCALAR_REFS = {
    "relu": (lambda v, a: v if v > 0 else 0.0, (-2.0, 2.0)),
    "sigmoid": (_sigmoid, (-6.0, 6.0)),
    "tanh": (lambda v, a: math.tanh(v), (-3.0, 3.0)),
    "gelu": (_gelu, (-5.0, 5.0)),
    "leaky_relu": (lambda v, a: v if v > 0 else a.get("alpha", 0.02) * v, (-2.0, 2.0)),
    "log": (lambda v, a: math.log(v), (0.1, 3.0)),
    "exp": (lambda v, a: math.exp(v), (-3.0, 3.0)),
    "sqrt": (lambda v, a: math.sqrt(v), (0.0, 4.0)),
    "square": (lambda v, a: v * v, (-3.0, 3.0)),
    "abs": (lambda v, a: -v if v < 0 else v, (-3.0, 3.0)),
}
SHAPES = [(3, 4), (2, 3, 4), (5,), ()]


def _case(op, shape, dtype="float64", attrs=None):
    fn, (low, high) = SCALAR_REFS[op]
    x = rng.uniform(low, high, shape).astype(dtype)
    # float32: one rounding of the kernel against one rounding of the float64 reference
    rtol = 1e-6 if dtype == "float32" else 1e-13
    return Case(op, {"X": x}, attrs=attrs or {}, reference=_elementwise(fn), rtol=rtol,
                id=f"{op}-{shape}-{dtype}-{attrs or ''}")


CASES = [_case(op, shape) for op in SCALAR_REFS for shape in SHAPES]
CASES += [_case(op, (4, 3), "float32") for op in SCALAR_REFS]
CASES += [
    _case("gelu", (3, 4), attrs={"approximate": True}),
    _case("gelu", (2, 5), "float32", attrs={"approximate": True}),
    _case("leaky_relu", (3, 4), attrs={"alpha": 0.1}),
    _case("leaky_relu", (3, 4), "float32", attrs={"alpha": 0.3}),
]
for _op in ("abs", "square"):
    for _dtype in ("int32", "int64"):
        _x = rng.integers(-50, 50, (3, 4)).astype(_dtype)
        CASES.append(Case(_op, {"X": _x}, id=f"{_op}-{_dtype}",
                          reference=lambda ins, attrs, fn=SCALAR_REFS[_op][0]: {
                              "Out": np.array([int(fn(int(v), attrs)) for v in ins["X"].ravel()],
                                              dtype=ins["X"].dtype).reshape(ins["X"].shape)}))


# --- softmax: a per-slice reference ------------------------------------------------------------------
def _softmax_slice(values):
    """Softmax of a Python list with math.exp, shifted by the max (softmax is shift invariant)."""
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = math.fsum(exps)
    return [e / total for e in exps]


def _softmax_reference(ins, attrs):
    x = ins["X"]
    axis = attrs.get("axis", -1) % x.ndim
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    out = np.array([_softmax_slice(list(row)) for row in rows]).reshape(moved.shape)
    return {"Out": np.moveaxis(out, -1, axis).astype(x.dtype)}


def _softmax_case(shape, axis, dtype="float64", scale=3.0, shift=0.0):
    x = (rng.uniform(-scale, scale, shape) + shift).astype(dtype)
    attrs = {} if axis is None else {"axis": axis}
    return Case("softmax", {"X": x}, attrs=attrs, reference=_softmax_reference,
                rtol=1e-6 if dtype == "float32" else 1e-13, id=f"softmax-{shape}-axis{axis}-{dtype}-shift{shift}")


SOFTMAX_CASES = [_softmax_case((2, 3, 4), axis) for axis in (None, -1, 0, 1, 2, -2, -3)]
SOFTMAX_CASES += [
    _softmax_case((4, 5), 1, "float32"),
    _softmax_case((4, 5), 0, "float32"),
    _softmax_case((6,), 0),
    _softmax_case((2, 3, 4, 5), 2),
    _softmax_case((3, 4), -1, shift=1000.0),               # exp(1000) overflows unless shifted
    _softmax_case((3, 4), 0, "float32", shift=-500.0),
    _softmax_case((3, 4), -1, "float64", scale=300.0),      # a spread of hundreds: tiny terms underflow
]
ALL = CASES + SOFTMAX_CASES


@pytest.mark.parametrize("case", ALL, ids=ids(ALL))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in ALL if np.ndim(c.inputs["X"]) >= 1], ids=str)
def test_infer_with_unknown_batch(case):
    check_infer_batch(dataclasses.replace(case, batch_outputs=("Out",)))


def _run(op, x, attrs=None):
    case = Case(op, {"X": x}, attrs=attrs or {}, reference=None)
    return build_and_run(case)[1]["Out"][0]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_is_stable_for_large_inputs(dtype):
    """No overflow warning (warnings are errors here) and saturation to exactly 0 and 1."""
    x = np.array([-1e4, -1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0, 1e4], dtype=dtype)
    got = _run("sigmoid", x)
    assert got.dtype == np.dtype(dtype)
    assert got[0] == 0.0 and got[-1] == 1.0 and got[4] == 0.5
    assert np.all(np.diff(got) >= 0)
    # far from saturation the small side keeps its relative accuracy: sigmoid(-30) ~ exp(-30)
    small = float(got[3])
    assert abs(small - math.exp(-30.0) / (1.0 + math.exp(-30.0))) <= 1e-6 * small


@pytest.mark.filterwarnings("error")
def test_softmax_of_huge_logits_has_no_overflow():
    x = np.array([[1e30, 0.0, -1e30], [5.0, 5.0, 5.0]], dtype="float32")
    got = _run("softmax", x)
    np.testing.assert_array_equal(got[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(got[1], [1 / 3] * 3, rtol=1e-7)


def test_gelu_exact_left_tail_is_accurate():
    """x * Phi(x) for very negative x is tiny but not 0: 1 + erf would cancel to 0 here."""
    x = np.array([-10.0, -20.0, -30.0])
    got = _run("gelu", x)
    want = [0.5 * v * math.erfc(-v / math.sqrt(2.0)) for v in x]
    assert all(w < 0 for w in want)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_gelu_approximation_differs_from_exact():
    x = np.linspace(-3, 3, 13)
    exact, approx = _run("gelu", x), _run("gelu", x, {"approximate": True})
    assert 0 < np.max(np.abs(exact - approx)) < 1e-3


def test_every_activation_may_overwrite_its_input():
    for op in list(SCALAR_REFS) + ["softmax"]:
        assert lookup(op).inplace == {"Out": "X"}, op


FLOAT_ONLY = ["relu", "sigmoid", "tanh", "gelu", "leaky_relu", "log", "exp", "sqrt", "softmax"]


@pytest.mark.parametrize("op", FLOAT_ONLY)
def test_integer_input_is_a_build_error(op):
    message = check_build_error(op, {"X": np.ones((2, 3), "int64")}, {}, DTypeError)
    assert "input `X`" in message and "int64" in message and "float32" in message


@pytest.mark.parametrize("op", ["abs", "square"])
def test_bool_input_is_a_build_error(op):
    check_build_error(op, {"X": np.ones((2, 3), "bool")}, {}, DTypeError, match="bool")


@pytest.mark.parametrize("axis", [2, -3, 5])
def test_softmax_axis_out_of_range_is_a_build_error(axis):
    message = check_build_error("softmax", {"X": np.ones((2, 3))}, {"axis": axis}, AttrError)
    assert "attribute `axis`" in message and "rank 2" in message and str(axis) in message


def test_unknown_attribute_is_a_build_error():
    check_build_error("relu", {"X": np.ones((2, 3))}, {"alpha": 0.1}, AttrError, match="alpha")
