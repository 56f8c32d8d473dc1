"""Python operators of Tensor and Variable (``headrace/nn/operators.py``): one definition, the same
values and dtypes in both modes, and the same errors."""
import operator
import re

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context
from headrace.core.errors import DTypeError
from headrace.core.variable import Parameter as StaticParameter
from headrace.core.variable import Variable
from headrace.eager.tensor import Parameter as EagerParameter
from headrace.eager.tensor import Tensor
from headrace.nn.operators import OPERATORS
from headrace.runtime import Executor, Scope

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "**": operator.pow, "@": operator.matmul, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
REFLECTED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}   # what Python calls for `other < x`
COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}


class Same:
    """The other operand is a tensor of the same class (and dtype) as x."""

    def __init__(self, array):
        self.array = array

    def __repr__(self):
        return f"Same({self.array.dtype})"


SCALARS = {"int": 3, "float": 2.5, "float_integral": 2.0, "bool": True, "np.int64": np.int64(3),
           "np.float32": np.float32(2.5), "np.float64": np.float64(2.0), "np.bool_": np.bool_(True)}
ARRAYS = {"nd_float64": np.array([0.5, 1.5, 2.5]), "nd_int32": np.array([1, 2, 3], np.int32),
          "nd_float32_integral": np.array([1.0, 2.0, 4.0], np.float32)}
X = {"float32": np.array([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0], [3.5, 4.0, 1.25]], np.float32),
     "int64": np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int64)}


def _operands(dtype):
    out = dict(SCALARS, **ARRAYS)
    out["same_class"] = Same(X[dtype][::-1].copy())
    return out


def _apply(symbol, x, other, side):
    return BINARY[symbol](x, other) if side == "left" else BINARY[symbol](other, x)


def _static(symbol, x_array, other, side):
    main = static.Program()
    feed = {"x": x_array}
    with static.program_guard(main, static.Program()):
        x = static.data("x", list(x_array.shape), str(x_array.dtype))
        if isinstance(other, Same):
            feed["y"] = other.array
            other = static.data("y", list(other.array.shape), str(other.array.dtype))
        out = _apply(symbol, x, other, side)
    assert isinstance(out, Variable), type(out)
    (value,) = Executor().run(main, feed=feed, fetch_list=[out], scope=Scope())
    assert out.dtype == value.dtype
    return value


def _eager(symbol, x_array, other, side):
    with context.static_mode_guard(False):
        x = paddle.to_tensor(x_array)
        if isinstance(other, Same):
            other = paddle.to_tensor(other.array)
        out = _apply(symbol, x, other, side)
        assert isinstance(out, Tensor), type(out)
        return out.numpy()


def _fractional(value) -> bool:
    array = np.asarray(value)
    return array.dtype.kind == "f" and not np.all(array == np.trunc(array))


def _numpy(symbol, x, other, side):
    """The documented rule in NumPy: an integer x meeting a fractional constant becomes float32,
    the constant takes x's dtype, integer ``/`` truncates (all values here are positive)."""
    y = other.array if isinstance(other, Same) else np.asarray(other)
    if x.dtype.kind in "iub" and _fractional(y):
        x = x.astype(np.float32)
    y = y.astype(x.dtype)
    a, b = (x, y) if side == "left" else (y, x)
    if symbol == "/" and x.dtype.kind in "iu":
        return np.floor_divide(a, b)
    return BINARY[symbol](a, b)


def _cases():
    for symbol in BINARY:
        for dtype in X:
            for name, other in _operands(dtype).items():
                if symbol == "@" and name in SCALARS:
                    continue
                for side in ("left", "right"):
                    yield pytest.param(symbol, dtype, other, side, id=f"{symbol}-{dtype}-{name}-{side}")


@pytest.mark.parametrize("symbol, dtype, other, side", list(_cases()))
def test_operator_gives_the_same_values_and_dtype_in_both_modes(symbol, dtype, other, side):
    x = X[dtype]
    got_static = _static(symbol, x, other, side)
    got_eager = _eager(symbol, x, other, side)
    want = _numpy(symbol, x, other, side)
    assert got_static.dtype == got_eager.dtype == want.dtype
    assert got_static.shape == got_eager.shape == want.shape
    np.testing.assert_array_equal(got_static, got_eager)
    np.testing.assert_allclose(got_eager, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", list(X))
def test_negation_in_both_modes(dtype):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        out = -static.data("x", [3, 3], dtype)
    (got,) = Executor().run(main, feed={"x": X[dtype]}, fetch_list=[out], scope=Scope())
    with context.static_mode_guard(False):
        eager = (-paddle.to_tensor(X[dtype])).numpy()
    assert got.dtype == eager.dtype == X[dtype].dtype and out.op.type == "scale"
    np.testing.assert_array_equal(got, -X[dtype])
    np.testing.assert_array_equal(eager, -X[dtype])


def test_each_operator_is_defined_once_for_both_classes():
    for name, func in OPERATORS.items():
        for cls in (Tensor, Variable, EagerParameter, StaticParameter):
            assert getattr(cls, name) is func, (cls.__name__, name)
    assert Tensor.__array_priority__ == Variable.__array_priority__ > 0


def test_variable_matmul_ndarray_on_either_side():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    w, v = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 2, 8).reshape(4, 2)
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2, 3], "float32")
        right = x @ w                   # w and v are float64: they become float32 constants
        left = v @ x
    types = [op.type for op in main.global_block().ops]
    assert types == ["assign_value", "matmul_v2", "assign_value", "matmul_v2"], types
    const = main.global_block().ops[0].output("Out")[0]
    assert main.global_block().var(const).stop_gradient
    got_right, got_left = Executor().run(main, feed={"x": a}, fetch_list=[right, left], scope=Scope())
    assert got_right.dtype == got_left.dtype == np.float32
    np.testing.assert_allclose(got_right, a @ w.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(got_left, v.astype(np.float32) @ a, rtol=1e-6)
    with context.static_mode_guard(False):
        t = paddle.to_tensor(a)
        np.testing.assert_array_equal((t @ w).numpy(), got_right)
        np.testing.assert_array_equal((v @ t).numpy(), got_left)


BAD_OPERANDS = {"str": "a", "None": None, "list": [1.0, 2.0], "complex": 1 + 2j,
                "str_ndarray": np.array(["a", "b", "c"])}


def _bad_cases():
    for symbol in BINARY:
        for name in BAD_OPERANDS:
            for side in ("left", "right"):
                for mode in ("static", "eager"):
                    yield pytest.param(symbol, name, side, mode, id=f"{symbol}-{name}-{side}-{mode}")


@pytest.mark.parametrize("symbol, name, side, mode", list(_bad_cases()))
def test_unsupported_operand_is_a_type_error_naming_operator_and_types(symbol, name, side, mode):
    bad = BAD_OPERANDS[name]
    type_name = f"ndarray of dtype {bad.dtype}" if isinstance(bad, np.ndarray) else type(bad).__name__
    with context.static_mode_guard(mode == "static"):
        x = static.data("x", [3], "float32") if mode == "static" else paddle.to_tensor(X["float32"][0])
        kind = type(x).__name__
        shown = symbol if side == "left" else REFLECTED.get(symbol, symbol)
        pair = (f"'{kind}' and '{type_name}'" if side == "left" or symbol in COMPARISONS
                else f"'{type_name}' and '{kind}'")
        if symbol in ("==", "!=") and not isinstance(bad, np.ndarray):
            # like any object: identity comparison (x == None is False), not an error
            assert _apply(symbol, x, bad, side) is (symbol == "!=")
            return
        with pytest.raises(TypeError, match=re.escape(f"unsupported operand type(s) for {shown}: {pair}")):
            _apply(symbol, x, bad, side)


@pytest.mark.parametrize("side", ["left", "right"])
def test_matmul_with_a_scalar_and_mixing_modes_are_type_errors(side):
    x = static.data("x", [3, 3], "float32")
    with pytest.raises(TypeError, match=r"for @: .*not a scalar"):
        _apply("@", x, 2.0, side)
    with context.static_mode_guard(False):
        t = paddle.to_tensor(X["float32"])
        with pytest.raises(TypeError, match=r"for @: .*not a scalar"):
            _apply("@", t, np.float32(2.0), side)
        for symbol in BINARY:
            with pytest.raises(TypeError, match=r"Tensor and a static Variable cannot be combined"):
                _apply(symbol, t, x, side)


def test_ndarray_and_numpy_scalar_on_the_left_dispatch_to_our_operators():
    with context.static_mode_guard(False):
        t = paddle.to_tensor(X["float32"])
        for out in (np.ones(3) + t, np.float32(2) * t, np.ones(3) < t, np.float64(1.0) - t):
            assert isinstance(out, Tensor)
        np.testing.assert_allclose(np.exp(t), np.exp(X["float32"]))   # ufuncs still read the data
    x = static.data("x", [3, 3], "float32")
    for out in (np.ones(3) + x, np.float32(2) * x, np.ones(3) < x, np.float64(1.0) - x, np.ones((3, 3)) @ x):
        assert isinstance(out, Variable)


def test_constants_are_ops_without_gradient_in_static_mode_and_scalars_use_scale():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [3], "float32")
        x.stop_gradient = False
        y = ((x * 2.0 + 1) ** 2.0 - np.array([1.0, 2.0, 3.0])).sum()
        forward = list(main.global_block().ops)
        (grad,) = static.gradients([y], [x])
    assert [op.type for op in forward] == ["scale", "scale", "fill_constant", "elementwise_pow", "assign_value",
                                           "elementwise_sub", "reduce_sum"]
    for op in forward[2], forward[4]:
        assert main.global_block().var(op.output("Out")[0]).stop_gradient
    assert forward[2].attr("shape") == [] and forward[4].attr("shape") == [3]
    a = np.array([0.5, 1.0, 2.0], np.float32)
    (g,) = Executor().run(main, feed={"x": a}, fetch_list=[grad], scope=Scope())
    np.testing.assert_allclose(g, 4 * (2 * a + 1), rtol=1e-6)


def test_eager_constants_stop_gradient_and_gradients_flow_to_the_tensor():
    with context.static_mode_guard(False):
        w = paddle.to_tensor(np.array([1.0, 2.0, 3.0], np.float32), stop_gradient=False)
        arr = np.array([0.5, -1.0, 2.0])
        ((arr - w) * w + arr / w).sum().backward()
        want = arr - 2 * w.numpy() - arr / w.numpy() ** 2
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["static", "eager"])
def test_integer_tensor_rules_and_dtype_mismatch(mode):
    ints = np.array([1, 2, 3], np.int64)
    cases = [(lambda x: x * np.float32(0.5), np.float32, ints * 0.5),     # fractional NumPy scalar
             (lambda x: x + np.array([0.25, 0, 0]), np.float32, ints + np.array([0.25, 0, 0])),
             (lambda x: x + 2.0, np.int64, ints + 2), (lambda x: x / 2, np.int64, ints // 2),
             (lambda x: x == 2**62 + 1, np.bool_, ints == 2**62 + 1)]
    for build, dtype, want in cases:
        if mode == "static":
            main = static.Program()
            with static.program_guard(main, static.Program()):
                out = build(static.data("x", [3], "int64"))
            (got,) = Executor().run(main, feed={"x": ints}, fetch_list=[out], scope=Scope())
        else:
            with context.static_mode_guard(False):
                got = build(paddle.to_tensor(ints)).numpy()
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want.astype(dtype))
    with context.static_mode_guard(mode == "static"):
        if mode == "static":
            a, b = static.data("a", [3], "float32"), static.data("b", [3], "float64")
        else:
            a, b = paddle.to_tensor(np.ones(3, np.float32)), paddle.to_tensor(np.ones(3))
        with pytest.raises(DTypeError):
            a + b


def test_tensors_and_variables_stay_hashable_by_identity():
    x, y = static.data("x", [2], "float32"), static.data("y", [2], "float32")
    table = {x: 1, y: 2}
    assert table[x] == 1 and table[y] == 2 and x in {x, y} and len({x, y, x}) == 2
    with context.static_mode_guard(False):
        a, b = paddle.to_tensor([1.0, 2.0]), paddle.to_tensor([1.0, 2.0])
        table = {a: "a", b: "b"}
        assert table[a] == "a" and table[b] == "b" and a in {a} and b not in {a}
