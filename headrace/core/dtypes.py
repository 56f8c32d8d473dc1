"""Data types: one canonical spelling per dtype, comparable with strings and NumPy dtypes.

``DType`` is a ``str`` subclass ("float32", "int64", ...), so it prints, hashes and serializes
as its name, and it also compares equal to the matching NumPy dtype or scalar type:

>>> DType("float32") == np.float32 and DType("float32") == "float32"
True
"""
from __future__ import annotations

import numpy as np

_CANONICAL = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "bool": np.bool_,
}
# Spellings users and Paddle code use for the same types.
_ALIASES = {
    "float": "float32",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "double": "float64",
    "int": "int64",
    "long": "int64",
    "bool_": "bool",
}


class DType(str):
    """A dtype name that also equals the NumPy dtype it stands for."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, str):
            return str.__eq__(self, _ALIASES.get(other, other))
        try:
            return np.dtype(other) == np.dtype(_CANONICAL[str(self)])
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = str.__hash__

    def __repr__(self):
        return f"paddle.{str(self)}"

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(_CANONICAL[str(self)])

    @property
    def is_floating(self) -> bool:
        return str(self).startswith("float")

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


float16 = DType("float16")
float32 = DType("float32")
float64 = DType("float64")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
bool_ = DType("bool")

_BY_NAME = {name: DType(name) for name in _CANONICAL}
_BY_NUMPY = {np.dtype(name): dtype for name, dtype in _BY_NAME.items()}


def convert_dtype(dtype) -> DType:
    """Return the canonical ``DType`` for a string, NumPy dtype/type or ``DType``.

    Raises ``TypeError`` naming the value for anything else.
    """
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, np.dtype):   # the common case in eager mode: an array's dtype
        known = _BY_NUMPY.get(dtype)
        if known is not None:
            return known
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _BY_NAME:
            return _BY_NAME[name]
        raise TypeError(f"unsupported dtype {dtype!r}; expected one of {sorted(_BY_NAME)}")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}; expected one of {sorted(_BY_NAME)}") from None
    if name not in _BY_NAME:
        raise TypeError(f"unsupported dtype {name!r}; expected one of {sorted(_BY_NAME)}")
    return _BY_NAME[name]


FLOATING = (float16, float32, float64)
