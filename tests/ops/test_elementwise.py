"""Elementwise ops: NumPy references with Paddle's axis rule written out independently."""
import numpy as np
import pytest

from headrace.core.errors import DTypeError, ShapeError
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(0)


def _expand(y, x_ndim, axis):
    """Y's dims placed at X's dims [axis, axis + y.ndim) — the reference rule, spelled out."""
    if axis == -1:
        return y
    shape = [1] * x_ndim
    for i, d in enumerate(y.shape):
        shape[axis + i] = d
    return y.reshape(shape)


REFS = {
    "elementwise_add": np.add,
    "elementwise_sub": np.subtract,
    "elementwise_mul": np.multiply,
    "elementwise_div": np.divide,
    "elementwise_max": np.maximum,
    "elementwise_min": np.minimum,
    "elementwise_pow": np.power,
}
SHAPES = [  # (x shape, y shape, axis)
    ((3, 4), (3, 4), -1),
    ((2, 3, 4), (4,), -1),
    ((2, 3, 4), (3,), 1),
    ((2, 3, 4, 5), (3, 4), 1),
    ((2, 1, 4), (3, 1), -1),
    ((4,), (2, 3, 4), -1),
    ((2, 3), (), -1),
]


def _case(op, xs, ys, axis, dtype="float64"):
    x = rng.uniform(0.5, 2.0, xs).astype(dtype)
    y = rng.uniform(0.5, 2.0, ys).astype(dtype)
    fn = REFS[op]
    return Case(op, {"X": x, "Y": y}, attrs={"axis": axis},
                reference=lambda ins, attrs, fn=fn: {
                    "Out": fn(ins["X"], _expand(ins["Y"], ins["X"].ndim, attrs["axis"]))},
                id=f"{op}-{xs}-{ys}-axis{axis}-{dtype}")


CASES = [_case(op, xs, ys, axis) for op in REFS for xs, ys, axis in SHAPES]
CASES += [_case(op, (3, 4), (4,), -1, "float32") for op in REFS]
CASES += [
    Case("elementwise_div", {"X": np.array([7, -7, 6, -1], "int64"), "Y": np.array([2, 2, -4, 3], "int64")},
         reference=lambda ins, attrs: {"Out": np.array([3, -3, -1, 0], "int64")}, id="int-div-truncates"),
    Case("elementwise_add", {"X": np.array([1, 2], "int64"), "Y": np.array([3, 4], "int64")},
         reference=lambda ins, attrs: {"Out": np.array([4, 6], "int64")}, id="int-add"),
]
for name, fn in [("less_than", np.less), ("less_equal", np.less_equal), ("greater_than", np.greater),
                 ("greater_equal", np.greater_equal), ("equal", np.equal), ("not_equal", np.not_equal)]:
    x = rng.integers(0, 3, (4, 3)).astype("float32")
    y = rng.integers(0, 3, (3,)).astype("float32")
    CASES.append(Case(name, {"X": x, "Y": y}, reference=lambda ins, attrs, fn=fn: {"Out": fn(ins["X"], ins["Y"])},
                      id=name))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if np.ndim(c.inputs["X"]) >= 2 and np.ndim(c.inputs["Y"]) >= 2
                                  and np.shape(c.inputs["X"])[0] == np.shape(c.inputs["Y"])[0]],
                         ids=str)
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_unknown_batch_meets_known_dim():
    """-1 against n broadcasts to n: the unknown dim must be n or 1 at run time."""
    case = Case("elementwise_add", {"X": np.ones((5, 3)), "Y": np.ones((5, 3))},
                reference=lambda ins, attrs: {"Out": ins["X"] + ins["Y"]}, batch_slots=("X",))
    check_infer_batch(case)


def test_shape_mismatch_is_a_build_error():
    message = check_build_error("elementwise_add", {"X": np.ones((3, 10)), "Y": np.ones((3,))},
                                {"axis": -1}, ShapeError)
    assert "input `Y`" in message and "[3, 10]" in message and "got [3]" in message


def test_axis_out_of_range_is_a_build_error():
    check_build_error("elementwise_add", {"X": np.ones((3, 4)), "Y": np.ones((4,))}, {"axis": 2}, ShapeError)
    check_build_error("elementwise_add", {"X": np.ones((3, 4)), "Y": np.ones((4,))}, {"axis": 0}, ShapeError)


def test_dtype_mismatch_is_a_build_error():
    message = check_build_error("elementwise_mul", {"X": np.ones((3,), "float32"), "Y": np.ones((3,), "float64")},
                                {}, DTypeError)
    assert "float32" in message and "float64" in message


# --- property: inference with unknown dims agrees with NumPy broadcasting ---------------------------
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra.numpy import mutually_broadcastable_shapes  # noqa: E402

from tests.ops.harness import infer_shapes  # noqa: E402


@given(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3), st.data())
def test_broadcast_inference_agrees_with_numpy(shapes, data):
    (xs, ys), result = shapes.input_shapes, shapes.result_shape
    hide_x = data.draw(st.lists(st.booleans(), min_size=len(xs), max_size=len(xs)))
    hide_y = data.draw(st.lists(st.booleans(), min_size=len(ys), max_size=len(ys)))
    x_decl = tuple(-1 if h else d for d, h in zip(xs, hide_x))
    y_decl = tuple(-1 if h else d for d, h in zip(ys, hide_y))
    inferred = infer_shapes("elementwise_add", {"X": x_decl, "Y": y_decl}, {"axis": -1})["Out"][0]
    assert len(inferred) == len(result)
    assert all(d in (-1, r) for d, r in zip(inferred, result)), (x_decl, y_decl, inferred, result)
    x, y = rng.random(xs), rng.random(ys)
    check_forward(Case("elementwise_add", {"X": x, "Y": y}, reference=lambda ins, attrs: {
        "Out": np.asarray(ins["X"] + ins["Y"])}))


# --- gradients: central differences in float64 ------------------------------------------------------
from tests.ops.gradcheck import check_grad  # noqa: E402

GRAD_SHAPES = SHAPES + [((3, 1), (1, 4), -1), ((2, 3, 4), (2, 3), 0)]


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("xs,ys,axis", GRAD_SHAPES, ids=[f"{a}-{b}-axis{c}" for a, b, c in GRAD_SHAPES])
def test_gradient(op, xs, ys, axis):
    grng = np.random.default_rng(hash((op, xs, ys, axis)) % 2**32)
    x = grng.uniform(0.5, 2.0, xs)
    y = grng.uniform(0.5, 2.0, ys)
    if op in ("elementwise_max", "elementwise_min") and x.shape == y.shape:
        y = np.where(np.abs(x - y) < 1e-3, y + 0.01, y)  # keep away from ties, where max is not differentiable
    check_grad(op, {"X": x, "Y": y}, {"axis": axis})


@pytest.mark.parametrize("wrt", [("X",), ("Y",)])
def test_gradient_of_one_operand(wrt):
    """Only the requested operand's gradient is computed; the other input is data."""
    check_grad("elementwise_mul", {"X": rng.random((2, 3)), "Y": rng.random((3,))}, wrt=wrt)


def test_max_ties_send_the_gradient_to_y():
    from headrace.autodiff import gradients
    from headrace.ops.apply import apply_op_single
    from tests.helpers import build_and_run

    def build(x, y):
        x.stop_gradient = y.stop_gradient = False
        return gradients([apply_op_single("elementwise_max", {"X": x, "Y": y})], [x, y])

    (dx, dy), _ = build_and_run(build, {"x": np.array([1.0, 2.0, 3.0]), "y": np.array([1.0, 1.0, 4.0])})
    np.testing.assert_array_equal(dx, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(dy, [1.0, 0.0, 1.0])


@given(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       st.sampled_from(["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div"]))
def test_gradient_property_random_broadcasting(shapes, op):
    """Any NumPy-broadcastable pair of shapes: analytic gradients match central differences."""
    xs, ys = shapes.input_shapes
    prng = np.random.default_rng(len(xs) * 7 + len(ys))
    check_grad(op, {"X": prng.uniform(0.5, 2.0, xs), "Y": prng.uniform(0.5, 2.0, ys)},
               {"axis": -1}, batch_unknown=False)
