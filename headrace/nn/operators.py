"""Python operators of eager Tensors and static Variables, defined once and bound onto both classes.

``+ - * / ** @`` (and their reflected forms), unary ``-``, ``< <= > >= == !=``, and the
conversion methods ``astype``/``cast``: every function here is the method of both classes, and
it runs the same ops through ``apply_op`` in both modes, so a layer written with operators builds
the same graph in a static Program as it runs eagerly.

Operands.  The other operand may be:

- a tensor of the same class (a Tensor for a Tensor, a Variable for a Variable): the op runs on
  both, which must share a dtype (a ``DTypeError`` from the op otherwise; tensors are never cast
  implicitly).  A Tensor meeting a Variable is a ``TypeError``.
- a *constant*: a Python ``int``/``float``/``bool``, a NumPy scalar, or a NumPy ndarray of bool,
  integer or floating dtype (a list is not one: wrap it in ``np.asarray``).
- anything else (a str, None, a complex number ...): a ``TypeError`` naming the operator and both
  types; except that ``==`` and ``!=`` with such an operand fall back to identity, as for any
  object (``x == None`` is False, ``x != None`` True, so ``x in [None, ...]`` works).

Constants take the tensor's dtype, with one exception: an integer or bool tensor meeting a
constant that holds a fractional value (``0.5``, ``np.float32(2.5)``, an array with one such
element; also inf and NaN) is first cast to float32.  Integral values keep the tensor's dtype:
``x_int64 + 2.0`` and ``x_int64 + np.array([1.0, 2.0])`` are int64.  ``bool`` counts as an
integer (True is 1) and a NumPy scalar as the Python number it holds.  A floating constant is
converted to a floating tensor's dtype (``x_float32 + np.ones(3)`` is float32).  In eager mode a
constant is a stop_gradient Tensor; in static mode it is an op of the current block whose output
has ``stop_gradient=True``: ``fill_constant`` (0-D) for a scalar, ``assign_value`` for an array.

Fast path and results.  ``x + c``, ``c + x``, ``x - c``, ``c - x``, ``x * c``, ``c * x`` with a
scalar ``c``, and ``x / c`` on a floating tensor, are one ``scale`` op; so ``x / 0`` on a floating
tensor raises ``ZeroDivisionError`` at once.  ``/`` on integer tensors truncates toward zero (the
integer kernel of ``elementwise_div``); comparisons give bool.  ``@`` (``matmul_v2``) takes a
tensor or an ndarray, not a scalar (a ``TypeError``; NumPy refuses a scalar operand of matmul
too).  Static outputs are named ``tmp_<n>`` as in the reference system.

NumPy.  Both classes get ``__array_priority__``, so ``ndarray <op> x`` and ``np.float32(2) <op>
x`` call our reflected operator instead of NumPy broadcasting an object array; NumPy functions
(``np.exp(t)``) still read a Tensor's data through ``Tensor.__array__``.  Hashing stays by
identity (the classes define ``__hash__``), so tensors remain usable as dict keys and set members;
because ``==`` builds an op, compare tensors with ``is``.

The reference (PaddlePaddle 2.x, ``math_op_patch``) was followed where headrace's two modes
disagreed: bool and NumPy scalars are numbers in both modes (bool as an integer) and a constant
takes the tensor's dtype; ndarray operands, which the reference supports in neither mode, follow
that constant rule.  Where both modes already agreed, headrace keeps its own rule although
the reference differs: the reference casts an integer tensor to float32 for every Python float
(here only for a fractional value), makes ``/`` of integer tensors a float32 true division (here
it truncates), and casts the right tensor to the left one's dtype with a warning (here a
``DTypeError``).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.dtypes import convert_dtype
from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op_single

_KEY = "tmp"
_ARRAY_KINDS = "biuf"   # bool, signed and unsigned integers, floating
_ARRAY_PRIORITY = 100


def astype(x, dtype):
    """``x`` cast to ``dtype`` (op ``cast``); ``Tensor.astype``/``Variable.astype`` and ``.cast``."""
    dtype = convert_dtype(dtype)
    return apply_op_single("cast", {"X": x}, {"in_dtype": str(x.dtype), "out_dtype": str(dtype)},
                           name_key=_KEY)


# --- operands ------------------------------------------------------------------------------------
def _number(value):
    """A Python or NumPy scalar as a Python int (bool included) or float; None for anything else."""
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def _fractional(value) -> bool:
    """Whether a constant holds a value no integer dtype can hold (a fraction, inf or NaN)."""
    if isinstance(value, float):
        return not value.is_integer()
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return not bool(np.all(np.isfinite(value) & (value == np.trunc(value))))
    return False


def _dtype(x) -> np.dtype:
    """The NumPy dtype of a Tensor or Variable (read off a Tensor's array: no dtype conversion on
    the eager hot path)."""
    return x._value.dtype if isinstance(x, Tensor) else x.dtype.numpy


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray of dtype {value.dtype}"
    return type(value).__name__


def _unsupported(symbol, x, other, reverse, hint=None) -> TypeError:
    names = [f"'{type(x).__name__}'", f"'{_type_name(other)}'"]
    left, right = names[::-1] if reverse else names
    kind = "Tensor" if isinstance(x, Tensor) else "Variable"
    hint = hint or (f"the other operand of a {kind} must be a {kind}, a Python or NumPy scalar, or a "
                    "NumPy ndarray of bool, integer or floating dtype")
    return TypeError(f"unsupported operand type(s) for {symbol}: {left} and {right}; {hint}")


def _operand(x, other, symbol, reverse):
    """``(x, y)``: ``y`` is ``other`` as a tensor of ``x``'s class, a Python number or an ndarray;
    ``x`` is cast to float32 when an integer tensor meets a fractional constant."""
    if isinstance(other, (Tensor, Variable)):
        if isinstance(other, Tensor) != isinstance(x, Tensor):
            raise _unsupported(symbol, x, other, reverse,
                               "an eager Tensor and a static Variable cannot be combined")
        return x, other
    value = _number(other)
    if value is None:
        if not isinstance(other, np.ndarray) or other.dtype.kind not in _ARRAY_KINDS:
            raise _unsupported(symbol, x, other, reverse)
        value = other
    if _dtype(x).kind != "f" and _fractional(value):
        x = astype(x, "float32")
    return x, value


def _constant(value, like):
    """``value`` (a Python number or an ndarray) as a constant of ``like``'s dtype and class."""
    array = np.asarray(value).astype(_dtype(like))   # a copy: the tape may keep it for backward
    if isinstance(like, Tensor):
        return Tensor._wrap(array, True)
    if array.ndim == 0:
        attrs = {"shape": [], "dtype": str(like.dtype), "value": float(array.item())}
        if array.dtype.kind in "iu":
            attrs["str_value"] = str(int(array.item()))   # exact beyond float precision
        out = apply_op_single("fill_constant", attrs=attrs, name_key=_KEY)
    else:
        out = apply_op_single("assign_value", attrs={"shape": list(array.shape), "dtype": str(like.dtype),
                                                     "values": array.ravel().tolist()}, name_key=_KEY)
    out.stop_gradient = True
    return out


def _is_tensor(value) -> bool:
    return isinstance(value, (Tensor, Variable))


def _scale(x, scale, bias):
    return apply_op_single("scale", {"X": x}, {"scale": float(scale), "bias": float(bias)}, name_key=_KEY)


# --- operators -----------------------------------------------------------------------------------
def _binary(name: str, op_type: str, symbol: str, reverse: bool = False, fast=None):
    """The operator method ``name`` running ``op_type`` on (self, other), or on (other, self) if
    ``reverse``.  ``fast(x, number)`` gives ``(scale, bias)`` when one ``scale`` op computes it."""
    def method(self, other):
        x, y = _operand(self, other, symbol, reverse)
        if fast is not None and not _is_tensor(y) and not isinstance(y, np.ndarray):
            scale_bias = fast(x, y)
            if scale_bias is not None:
                return _scale(x, *scale_bias)
        if not _is_tensor(y):
            y = _constant(y, x)
        left, right = (y, x) if reverse else (x, y)
        return apply_op_single(op_type, {"X": left, "Y": right}, name_key=_KEY)

    operands = ("other", "self") if reverse else ("self", "other")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{operands[0]} {symbol} {operands[1]}`` (op ``{op_type}``)."
    return method


def _matmul(name: str, reverse: bool):
    binary = _binary(name, "matmul_v2", "@", reverse)

    def method(self, other):
        if _number(other) is not None:
            raise _unsupported("@", self, other, reverse, "matmul needs operands of rank >= 1 (a tensor or "
                               "an ndarray), not a scalar; use * to multiply by a scalar")
        return binary(self, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = binary.__doc__
    return method


def _true_divide_fast(x, value):
    if _dtype(x).kind != "f":
        return None
    if value == 0:
        raise ZeroDivisionError(f"/: dividing {type(x).__name__} {x.name!r} by the constant 0")
    return 1.0 / value, 0.0


def _neg(self):
    """``-self`` (op ``scale`` by -1)."""
    return _scale(self, -1.0, 0.0)


def _add_fast(x, v):
    return 1.0, v


def _mul_fast(x, v):
    return v, 0.0


# name, op type, symbol, reverse, scale fast path
_BINARY = [
    ("__add__", "elementwise_add", "+", False, _add_fast),
    ("__radd__", "elementwise_add", "+", True, _add_fast),
    ("__sub__", "elementwise_sub", "-", False, lambda x, v: (1.0, -v)),
    ("__rsub__", "elementwise_sub", "-", True, lambda x, v: (-1.0, v)),
    ("__mul__", "elementwise_mul", "*", False, _mul_fast),
    ("__rmul__", "elementwise_mul", "*", True, _mul_fast),
    ("__truediv__", "elementwise_div", "/", False, _true_divide_fast),
    ("__rtruediv__", "elementwise_div", "/", True, None),
    ("__pow__", "elementwise_pow", "**", False, None),
    ("__rpow__", "elementwise_pow", "**", True, None),
    ("__lt__", "less_than", "<", False, None),
    ("__le__", "less_equal", "<=", False, None),
    ("__gt__", "greater_than", ">", False, None),
    ("__ge__", "greater_equal", ">=", False, None),
    ("__eq__", "equal", "==", False, None),
    ("__ne__", "not_equal", "!=", False, None),
]

#: Every Python operator (and conversion method) of Tensor and Variable: name -> function.
OPERATORS = {name: _binary(name, op_type, symbol, reverse, fast) for name, op_type, symbol, reverse, fast in _BINARY}


def _equality(name):
    """``==``/``!=`` with an operand that is no tensor, number or numeric ndarray (``None``, a
    string, a list) give NotImplemented, so Python compares identities (``x == None`` is False,
    ``x != None`` True) as for any object, instead of raising."""
    compare = OPERATORS[name]

    def method(self, other):
        if not isinstance(other, (Tensor, Variable, np.ndarray)) and _number(other) is None:
            return NotImplemented
        return compare(self, other)
    method.__name__ = name
    method.__doc__ = compare.__doc__
    return method


OPERATORS.update({name: _equality(name) for name in ("__eq__", "__ne__")})
OPERATORS.update({"__matmul__": _matmul("__matmul__", False), "__rmatmul__": _matmul("__rmatmul__", True),
                  "__neg__": _neg, "astype": astype, "cast": astype})


def bind() -> None:
    """Install the operators (and ``__array_priority__``) on Tensor and Variable (and so on their
    Parameter subclasses)."""
    for cls in (Tensor, Variable):
        for name, func in OPERATORS.items():
            setattr(cls, name, func)
        cls.__array_priority__ = _ARRAY_PRIORITY


bind()
