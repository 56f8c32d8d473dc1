"""Python operators on static Variables (``+ - * / @ ** -x < <= > >= == !=``, ``astype``).

Bound onto ``Variable`` at import time (core may not import ops).  Scalar operands become a
``scale`` op where possible, otherwise a 0-D ``fill_constant`` that broadcasts; outputs are named
``tmp_<n>`` as in the reference system.
"""
from __future__ import annotations

import numbers

from ..core.dtypes import convert_dtype
from ..core.variable import Variable
from .apply import apply_op_single

_KEY = "tmp"


def _const(value, like: Variable) -> Variable:
    return apply_op_single("fill_constant", attrs={"shape": [], "dtype": str(like.dtype), "value": float(value)},
                           name_key=_KEY)


def _float_if_needed(x: Variable, scalar) -> Variable:
    """An integer Variable meeting a non-integral scalar is computed in float32."""
    if not x.dtype.is_floating and isinstance(scalar, float) and not float(scalar).is_integer():
        return astype(x, "float32")
    return x


def _scale(x: Variable, scale: float, bias: float) -> Variable:
    return apply_op_single("scale", {"X": x}, {"scale": float(scale), "bias": float(bias)}, name_key=_KEY)


def _binary(op_type: str, reverse: bool = False):
    def method(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool):
            x = _float_if_needed(self, other)
            other_var = _const(other, x)
            left, right = (other_var, x) if reverse else (x, other_var)
        elif isinstance(other, Variable):
            left, right = (other, self) if reverse else (self, other)
        else:
            return NotImplemented
        return apply_op_single(op_type, {"X": left, "Y": right}, name_key=_KEY)
    return method


def _add(self, other):
    if isinstance(other, numbers.Number) and not isinstance(other, bool):
        return _scale(_float_if_needed(self, other), 1.0, other)
    return _binary("elementwise_add")(self, other)


def _sub(self, other):
    if isinstance(other, numbers.Number) and not isinstance(other, bool):
        return _scale(_float_if_needed(self, other), 1.0, -other)
    return _binary("elementwise_sub")(self, other)


def _rsub(self, other):
    if isinstance(other, numbers.Number) and not isinstance(other, bool):
        return _scale(_float_if_needed(self, other), -1.0, other)
    return NotImplemented


def _mul(self, other):
    if isinstance(other, numbers.Number) and not isinstance(other, bool):
        return _scale(_float_if_needed(self, other), other, 0.0)
    return _binary("elementwise_mul")(self, other)


def _truediv(self, other):
    if isinstance(other, numbers.Number) and not isinstance(other, bool) and self.dtype.is_floating:
        if other == 0:
            raise ZeroDivisionError(f"dividing Variable {self.name!r} by the constant 0")
        return _scale(self, 1.0 / other, 0.0)
    return _binary("elementwise_div")(self, other)


def _neg(self):
    return _scale(self, -1.0, 0.0)


def _matmul(self, other):
    if not isinstance(other, Variable):
        return NotImplemented
    return apply_op_single("matmul_v2", {"X": self, "Y": other}, name_key=_KEY)


def _rmatmul(self, other):
    if not isinstance(other, Variable):
        return NotImplemented
    return apply_op_single("matmul_v2", {"X": other, "Y": self}, name_key=_KEY)


def astype(self, dtype) -> Variable:
    dtype = convert_dtype(dtype)
    return apply_op_single("cast", {"X": self}, {"in_dtype": str(self.dtype), "out_dtype": str(dtype)},
                           name_key=_KEY)


def bind(cls=Variable) -> None:
    cls.__add__ = _add
    cls.__radd__ = _add
    cls.__sub__ = _sub
    cls.__rsub__ = _rsub
    cls.__mul__ = _mul
    cls.__rmul__ = _mul
    cls.__truediv__ = _truediv
    cls.__rtruediv__ = _binary("elementwise_div", reverse=True)
    cls.__pow__ = _binary("elementwise_pow")
    cls.__rpow__ = _binary("elementwise_pow", reverse=True)
    cls.__neg__ = _neg
    cls.__matmul__ = _matmul
    cls.__rmatmul__ = _rmatmul
    cls.__lt__ = _binary("less_than")
    cls.__le__ = _binary("less_equal")
    cls.__gt__ = _binary("greater_than")
    cls.__ge__ = _binary("greater_equal")
    cls.__eq__ = _binary("equal")
    cls.__ne__ = _binary("not_equal")
    cls.__hash__ = object.__hash__
    cls.astype = astype


bind()
