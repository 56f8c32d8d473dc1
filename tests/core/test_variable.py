import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import dtypes, names
from headrace.runtime import Executor, Scope

rng = np.random.default_rng(1)


def _eval(build, **feeds):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        vars_ = {k: static.data(k, list(v.shape), v.dtype.name) for k, v in feeds.items()}
        out = build(**vars_)
    outs = out if isinstance(out, tuple) else (out,)
    values = Executor().run(main, feed=feeds, fetch_list=list(outs), scope=Scope())
    return (values if isinstance(out, tuple) else values[0]), outs


@pytest.mark.parametrize("expr, ref", [
    (lambda a, b: a + b, lambda a, b: a + b),
    (lambda a, b: a - b, lambda a, b: a - b),
    (lambda a, b: a * b, lambda a, b: a * b),
    (lambda a, b: a / b, lambda a, b: a / b),
    (lambda a, b: a ** b, lambda a, b: a ** b),
    (lambda a, b: -a, lambda a, b: -a),
    (lambda a, b: a + 2.5, lambda a, b: a + 2.5),
    (lambda a, b: 2.5 + a, lambda a, b: 2.5 + a),
    (lambda a, b: a - 1.5, lambda a, b: a - 1.5),
    (lambda a, b: 1.5 - a, lambda a, b: 1.5 - a),
    (lambda a, b: a * 3.0, lambda a, b: a * 3.0),
    (lambda a, b: 3.0 * a, lambda a, b: 3.0 * a),
    (lambda a, b: a / 4.0, lambda a, b: a / 4.0),
    (lambda a, b: 4.0 / a, lambda a, b: 4.0 / a),
    (lambda a, b: a ** 2, lambda a, b: a ** 2),
    (lambda a, b: 2 ** a, lambda a, b: 2 ** a),
])
def test_arithmetic_operators(expr, ref):
    a, b = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (3, 4))
    got, _ = _eval(expr, a=a, b=b)
    np.testing.assert_allclose(got, ref(a, b), rtol=1e-12)


def test_matmul_operator():
    a, b = rng.random((2, 3)), rng.random((3, 5))
    got, (out,) = _eval(lambda a, b: a @ b, a=a, b=b)
    assert out.op.type == "matmul_v2"
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)


def test_comparisons_build_bool_ops():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    got, outs = _eval(lambda a, b: (a < b, a <= b, a > b, a >= b, a == b, a != b, a < 2.0), a=a, b=b)
    assert [o.op.type for o in outs] == ["less_than", "less_equal", "greater_than", "greater_equal",
                                         "equal", "not_equal", "less_than"]
    want = [a < b, a <= b, a > b, a >= b, a == b, a != b, a < 2.0]
    for g, w in zip(got, want):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, w)


def test_integer_variable_with_fractional_scalar_is_computed_in_float():
    a = np.array([1, 2, 3], "int64")
    got, (out,) = _eval(lambda a, b: a * 0.5, a=a, b=a)
    assert out.dtype == "float32"
    np.testing.assert_array_equal(got, np.array([0.5, 1.0, 1.5], "float32"))
    got, (out,) = _eval(lambda a, b: a + 2, a=a, b=a)
    assert out.dtype == "int64"
    np.testing.assert_array_equal(got, a + 2)


def test_operator_outputs_are_named_tmp():
    with names.guard():
        x = static.data("x", [2], "float32")
        y = x + x
        z = y * 2.0
    assert (y.name, z.name) == ("tmp_0", "tmp_1")


def test_variables_have_no_truth_value():
    x = static.data("x", [2], "float32")
    y = static.data("y", [2], "float32")
    with pytest.raises(TypeError, match="truth value of static Variable 'x'"):
        bool(x)
    with pytest.raises(TypeError):
        x in [y]  # noqa: B015  (== builds an op; membership must not answer wrongly)
    assert hash(x) != hash(y) and x is not y
    assert len(static.data("z", [4, 2])) == 4
    with pytest.raises(TypeError, match="len\\(\\) of Variable 'w'"):
        len(static.data("w", [None, 2]))


def test_astype_and_repr():
    x = static.data("x", [None, 3], "float32")
    y = x.astype("int64")
    assert y.op.type == "cast" and y.dtype == "int64" and y.shape == (-1, 3)
    assert repr(x) == "var x : LOD_TENSOR.shape(-1, 3).dtype(float32).stop_gradient(True)"


def test_dtypes_compare_with_strings_and_numpy():
    assert dtypes.float32 == "float32" and dtypes.float32 == np.float32 and dtypes.float32 == np.dtype("float32")
    assert dtypes.float32 != "float64" and paddle.int64 == np.int64
    assert dtypes.convert_dtype("float") == "float32" and dtypes.convert_dtype(np.float64) == "float64"
    assert repr(paddle.float32) == "paddle.float32" and str(paddle.float32) == "float32"
    with pytest.raises(TypeError, match="unsupported dtype 'complex64'"):
        dtypes.convert_dtype("complex64")
    with pytest.raises(TypeError, match="unsupported dtype"):
        static.data("q", [2], "str")


@pytest.mark.parametrize("grad, forward", [
    ("x@GRAD", "x"), ("x@GRAD@GRAD", "x"), ("x@GRAD@RENAME@1", "x"),
    ("x@GRAD_slice_0@GRAD", "x@GRAD_slice_0"), ("grad/grad/x@GRAD@RENAME@block0@1@GRAD", "x"), ("x", "x"),
])
def test_strip_grad_suffix(grad, forward):
    assert names.strip_grad_suffix(grad) == forward


def test_grad_names():
    assert names.grad_name("fc_0.w_0") == "fc_0.w_0@GRAD"
    assert names.rename_grad("h@GRAD", 0, 2) == "h@GRAD@RENAME@block0@2"
