"""``paddle.*`` creation, random and type functions (both modes): linspace, eye, empty, full_like,
random draws (from the same generators as every random op: ``paddle.seed`` or the program's),
dtype predicates, ``iinfo``/``finfo`` (facts from NumPy), and the reference's dtype names.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.dtypes import DType, convert_dtype
from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op_single
from . import tensor as T


def _dtype(dtype, default="float32"):
    return str(convert_dtype(default if dtype is None else dtype))


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    if isinstance(shape, (Tensor, Variable)):
        if isinstance(shape, Variable):
            raise NotImplementedError("a shape given as a static Variable is not supported here yet")
        return [int(v) for v in shape.numpy().reshape(-1)]
    return [int(s.item()) if isinstance(s, Tensor) else int(s) for s in shape]


def _scalar(v):
    return float(v.item()) if isinstance(v, Tensor) else float(v)


def linspace(start, stop, num, dtype=None, name=None):
    """``num`` evenly spaced values from start to stop (both included); float32 by default."""
    num = int(num.item()) if isinstance(num, Tensor) else int(num)
    return apply_op_single("linspace", attrs={"start": _scalar(start), "stop": _scalar(stop), "num": num,
                                              "dtype": _dtype(dtype)}, name_key=T._key("linspace", name))


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """``base ** linspace(start, stop, num)`` (float32 by default)."""
    exps = linspace(start, stop, num, "float64")
    out = T._elementwise("elementwise_pow", T.full([int(num)], float(base), "float64"), exps)
    return T.cast(out, _dtype(dtype))


def eye(num_rows, num_columns=None, dtype=None, name=None):
    """The identity matrix of num_rows x num_columns (float32 by default)."""
    return apply_op_single("eye", attrs={"num_rows": int(num_rows),
                                         "num_columns": -1 if num_columns is None else int(num_columns),
                                         "dtype": _dtype(dtype)}, name_key=T._key("eye", name))


def empty(shape, dtype=None, name=None):
    """A tensor of ``shape`` (headrace fills it with zeros: its values are unspecified)."""
    return T.full(_shape(shape), 0.0, _dtype(dtype))


def empty_like(x, dtype=None, name=None):
    return T.full(list(x.shape), 0.0, _dtype(dtype, x.dtype))


def full_like(x, fill_value, dtype=None, name=None):
    """A tensor shaped like x filled with ``fill_value`` (op ``fill_any_like``)."""
    return apply_op_single("fill_any_like", {"X": x}, {"value": float(fill_value),
                                                       "dtype": "" if dtype is None else _dtype(dtype)},
                           name_key=T._key("full_like", name))


def rand_like(x, dtype=None, name=None):
    return T.rand(list(x.shape), _dtype(dtype, x.dtype))


def randn_like(x, dtype=None, name=None):
    return T.randn(list(x.shape), _dtype(dtype, x.dtype))


def standard_normal(shape, dtype=None, name=None):
    return T.randn(_shape(shape), dtype)


def randint(low=0, high=None, shape=(1,), dtype=None, name=None):
    """Uniform integers in [low, high) (``randint(high)`` draws from [0, high)); int64 by default."""
    if high is None:
        low, high = 0, low
    return apply_op_single("randint", attrs={"low": int(low), "high": int(high), "shape": _shape(shape),
                                             "dtype": _dtype(dtype, "int64")}, name_key=T._key("randint", name))


def randint_like(x, low=0, high=None, dtype=None, name=None):
    return randint(low, high, list(x.shape), _dtype(dtype, x.dtype))


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0..n-1."""
    return apply_op_single("randperm", attrs={"n": int(n), "dtype": _dtype(dtype)}, name_key=T._key("randperm", name))


def bernoulli(x, p=None, name=None):
    """1 with probability x (elementwise), else 0, in x's dtype."""
    if p is not None:
        x = T.full(list(x.shape), float(p), x.dtype)
    return apply_op_single("bernoulli", {"X": x}, name_key=T._key("bernoulli", name))


def poisson(x, name=None):
    """Poisson draws with the rates in x."""
    return apply_op_single("poisson", {"X": x}, name_key=T._key("poisson", name))


def multinomial(x, num_samples=1, replacement=False, name=None):
    """Category indices (int64) drawn with the weights of each row of x."""
    return apply_op_single("multinomial", {"X": x}, {"num_samples": int(num_samples),
                                                     "replacement": bool(replacement)},
                           name_key=T._key("multinomial", name))


# --- types -------------------------------------------------------------------------------------
def is_tensor(x):
    """Whether x is a headrace Tensor (eager) or Variable (static)."""
    return isinstance(x, (Tensor, Variable))


def is_floating_point(x):
    return convert_dtype(x.dtype).is_floating


def is_integer(x):
    return convert_dtype(x.dtype).numpy.kind in "iu"


def is_complex(x):
    return False   # headrace has no complex dtypes


def is_empty(x, name=None):
    """Whether x has no elements (a bool 0-D tensor)."""
    return T.full([], int(np.prod(x.shape)) == 0, "bool")


def rank(input):  # noqa: A002
    """The rank of the input, an int32 0-D tensor."""
    return T.full([], len(input.shape), "int32")


def shape(input):  # noqa: A002
    """The shape of the input as an int32 tensor (op ``shape``)."""
    return apply_op_single("shape", {"Input": input}, name_key=T._key("shape"))


def clone(x, name=None):
    """A copy of x (op ``assign``; gradients flow through)."""
    return T.assign(x)


def tolist(x):
    return x.tolist() if isinstance(x, Tensor) else np.asarray(x).tolist()


class iinfo:  # noqa: N801  (the reference's name)
    """Facts of an integer dtype (NumPy's ``iinfo``): bits, min, max, dtype."""

    def __init__(self, dtype):
        info = np.iinfo(convert_dtype(dtype).numpy)
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), str(convert_dtype(dtype))

    def __repr__(self):
        return f"paddle.iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"


class finfo:  # noqa: N801
    """Facts of a floating dtype (NumPy's ``finfo``): bits, eps, min, max, tiny/smallest_normal, resolution."""

    def __init__(self, dtype):
        info = np.finfo(convert_dtype(dtype).numpy)
        self.bits, self.eps, self.min, self.max = info.bits, float(info.eps), float(info.min), float(info.max)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)
        self.dtype = str(convert_dtype(dtype))

    def __repr__(self):
        return (f"paddle.finfo(min={self.min}, max={self.max}, eps={self.eps}, resolution={self.resolution}, "
                f"smallest_normal={self.smallest_normal}, bits={self.bits}, dtype={self.dtype})")


dtype = DType
pi, e, inf, nan = np.pi, np.e, np.inf, np.nan
newaxis = None

__all__ = ["bernoulli", "clone", "dtype", "e", "empty", "empty_like", "eye", "finfo", "full_like", "iinfo", "inf", "is_complex", "is_empty", "is_floating_point", "is_integer", "is_tensor",
           "linspace", "logspace", "multinomial", "nan", "newaxis", "pi", "poisson", "rand_like", "randint",
           "randint_like", "randn_like", "randperm", "rank", "shape", "standard_normal", "tolist"]
