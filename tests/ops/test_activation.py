"""Activation ops: references written with the math module, one element (or one slice) at a time."""
import dataclasses
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError
from headrace.ops.kernel import context
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


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.autodiff import gradients  # noqa: E402
from headrace.ops.apply import apply_op_single  # noqa: E402
from headrace.ops.gradrule import grad_slot  # noqa: E402
from tests.helpers import build_and_run as run_program  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(7)
# input ranges that keep away from kinks (relu, leaky_relu, abs at 0) and from log/sqrt's pole
GRAD_RANGES = {"log": (0.2, 3.0), "sqrt": (0.2, 4.0)}
GRAD_SHAPES = [(3, 4), (2, 3, 2), (5,), ()]


def _grad_input(op, shape):
    low, high = GRAD_RANGES.get(op, (-2.0, 2.0))
    if low >= 0:
        return grng.uniform(low, high, shape)
    magnitude = grng.uniform(0.1, high, shape)           # |x| >= 0.1: no kink within eps
    return np.where(grng.random(shape) < 0.5, -magnitude, magnitude)


GRAD_CASES = [(op, shape, {}) for op in SCALAR_REFS for shape in GRAD_SHAPES]
GRAD_CASES += [
    ("gelu", (3, 4), {"approximate": True}),
    ("gelu", (), {"approximate": True}),
    ("leaky_relu", (3, 4), {"alpha": 0.3}),
    ("leaky_relu", (2, 5), {"alpha": -0.5}),
]


@pytest.mark.parametrize("op,shape,attrs", GRAD_CASES, ids=[f"{o}-{s}-{a}" for o, s, a in GRAD_CASES])
def test_gradient(op, shape, attrs):
    check_grad(op, {"X": _grad_input(op, shape)}, attrs)


SOFTMAX_GRAD_CASES = [((2, 3, 4), axis) for axis in (-1, 0, 1, 2, -2)]
SOFTMAX_GRAD_CASES += [((4, 5), 0), ((4, 5), -1), ((6,), 0), ((), -1)]


@pytest.mark.parametrize("shape,axis", SOFTMAX_GRAD_CASES, ids=[f"{s}-axis{a}" for s, a in SOFTMAX_GRAD_CASES])
def test_softmax_gradient(shape, axis):
    check_grad("softmax", {"X": grng.uniform(-2.0, 2.0, shape)}, {"axis": axis})


def _input_grad(op, x, dout, attrs=None):
    """X@GRAD of ``op`` at ``x`` for the output gradient ``dout``, and the program's grad op."""
    def build(x, dout):
        x.stop_gradient = False
        out = apply_op_single(op, {"X": x}, attrs or {})
        (dx,) = gradients([out], [x], target_gradients=[dout])
        return dx

    (dx,), (var,) = run_program(build, {"x": x, "dout": dout})
    grad_op = next(o for o in var.block.ops if o.type == f"{op}_grad")
    return dx, grad_op


def test_derivatives_at_kinks_follow_the_reference():
    x = np.array([-1.0, 0.0, 2.0])
    dout = np.array([3.0, 5.0, 7.0])
    np.testing.assert_array_equal(_input_grad("relu", x, dout)[0], [0.0, 0.0, 7.0])          # Out > 0
    np.testing.assert_array_equal(_input_grad("leaky_relu", x, dout, {"alpha": 0.5})[0],
                                  [1.5, 2.5, 7.0])                                           # X > 0
    np.testing.assert_array_equal(_input_grad("abs", x, dout)[0], [-3.0, 0.0, 7.0])         # sign(0) = 0


# the forward slot each gradient op reads besides Out@GRAD: Out where the derivative is a
# function of the output (X may then be overwritten by the inplace forward); gelu reads both
# (exact float32 takes Phi(X) = Out / X)
GRAD_READS = {"relu": "Out", "sigmoid": "Out", "tanh": "Out", "exp": "Out", "sqrt": "Out", "softmax": "Out",
              "leaky_relu": "X", "gelu": ("X", "Out"), "log": "X", "square": "X", "abs": "X"}


@pytest.mark.parametrize("op", sorted(GRAD_READS))
def test_gradient_op_reads_the_cheaper_forward_slot(op):
    x = _grad_input(op, (2, 3))
    _, grad_op = _input_grad(op, x, np.ones_like(x))
    reads = GRAD_READS[op]
    assert set(grad_op.inputs) == {*((reads,) if isinstance(reads, str) else reads), grad_slot("Out")}
    assert lookup(f"{op}_grad").inplace == {grad_slot("X"): grad_slot("Out")}


@pytest.mark.parametrize("op", sorted(GRAD_READS))
def test_float32_gradient_stays_float32(op):
    x = _grad_input(op, (3, 4))
    dout = grng.uniform(-1.0, 1.0, (3, 4))
    want, _ = _input_grad(op, x, dout)
    got, _ = _input_grad(op, x.astype("float32"), dout.astype("float32"))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("op", ["sigmoid", "tanh", "gelu"])
def test_saturated_gradient_is_zero_without_warnings(op):
    x = np.array([-1000.0, -40.0, 40.0, 1000.0])
    dx, _ = _input_grad(op, x, np.ones(4))
    want = [0.0, 0.0, 1.0, 1.0] if op == "gelu" else [0.0] * 4
    np.testing.assert_allclose(dx, want, atol=1e-15)


def test_gradient_kernels_compute_only_wanted_outputs():
    out = np.array([[0.2, 0.8], [0.5, 0.5]])
    dout = np.ones((2, 2))
    for op, ins in (("softmax_grad", {"Out": out, grad_slot("Out"): dout}),
                    ("relu_grad", {"Out": out, grad_slot("Out"): dout}),
                    ("gelu_grad", {"X": out, grad_slot("Out"): dout})):
        opdef = lookup(op)
        attrs = {name: default for name, default in opdef.attrs.items()}
        assert opdef.kernel(ins, attrs, context()) == {}, op
        assert set(opdef.kernel(ins, attrs, context([grad_slot("X")]))) == {grad_slot("X")}, op


def test_softmax_gradient_rows_sum_to_zero():
    """softmax is invariant to adding a constant along the axis, so dX sums to 0 along it."""
    out = np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
    kernel = lookup("softmax_grad").kernel
    dx = kernel({"Out": out, grad_slot("Out"): np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.0]])},
                {"axis": 1}, context([grad_slot("X")]))[grad_slot("X")]
    np.testing.assert_allclose(dx.sum(axis=1), 0.0, atol=1e-15)
    # dX = Out * (dOut - <dOut, Out>), row by row
    np.testing.assert_allclose(dx[0], out[0] * (np.array([1.0, -2.0, 0.5]) - (0.1 - 0.4 + 0.35)))


def test_integer_gradient_is_a_clear_error():
    kernel = lookup("square_grad").kernel
    with pytest.raises(TypeError, match="square_grad"):
        kernel({"X": np.arange(3), grad_slot("Out"): np.ones(3)}, {}, context([grad_slot("X")]))
