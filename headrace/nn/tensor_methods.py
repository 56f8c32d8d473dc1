"""Math and shape methods of eager Tensors and static Variables (``x.mean()``, ``x.reshape(...)``,
``x[1:, 0]``), bound at import time onto both classes: the functions are the ``paddle.*`` ones, so a
method runs the same ops in both modes.  A method a class already defines is left alone.
"""
from __future__ import annotations

import numbers

from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op
from . import functional as F
from . import tensor as T

_INT_MAX = 2**31 - 1


def getitem(x, index):
    """Basic indexing with ints, ``:``-slices (step 1) and ``...`` (op ``slice``; ints drop the axis)."""
    items = index if isinstance(index, tuple) else (index,)
    rank = len(x.shape)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(i is Ellipsis for i in items):
        pos = next(k for k, i in enumerate(items) if i is Ellipsis)
        fill = rank - (len(items) - 1)
        items = items[:pos] + (slice(None),) * fill + items[pos + 1:]
    if len(items) > rank:
        raise IndexError(f"too many indices for a tensor of rank {rank}: {index!r}")
    axes, starts, ends, decrease = [], [], [], []
    for axis, item in enumerate(items):
        dim = x.shape[axis]
        if isinstance(item, bool) or not isinstance(item, (numbers.Integral, slice)):
            raise TypeError(f"indexing supports ints, ':' slices and '...'; got {type(item).__name__} "
                            f"{item!r} (indexing with tensors or lists, i.e. gather, is not supported yet)")
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise ValueError(f"slices with a step other than 1 are not supported, got {item!r}")
            if item.start is None and item.stop is None:
                continue
            start = 0 if item.start is None else int(item.start)
            stop = _INT_MAX if item.stop is None else int(item.stop)
        else:
            i = int(item)
            if dim >= 0 and not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {dim}")
            start, stop = i, (i + 1 if i != -1 else _INT_MAX)
            decrease.append(axis)
        axes.append(axis)
        starts.append(start)
        ends.append(stop)
    if not axes:
        return x
    return apply_op("slice", {"Input": x}, {"axes": axes, "starts": starts, "ends": ends,
                                           "decrease_axis": decrease}, name_key=T._key("slice"))["Out"][0]


def _transpose_all(x):
    return T.transpose(x, list(range(len(x.shape)))[::-1])


_METHODS = {
    "__getitem__": getitem,
    "mean": T.mean, "sum": T.sum, "max": T.max, "min": T.min,
    "reshape": T.reshape, "transpose": T.transpose, "flatten": T.flatten, "squeeze": T.squeeze,
    "unsqueeze": T.unsqueeze, "split": T.split, "matmul": T.matmul, "scale": T.scale,
    "add": T.add, "subtract": T.subtract, "multiply": T.multiply, "divide": T.divide, "pow": T.pow,
    "maximum": T.maximum, "minimum": T.minimum,
    "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "square": F.square, "abs": F.abs, "tanh": F.tanh,
    "sigmoid": F.sigmoid, "relu": F.relu,
}


def bind() -> None:
    for cls in (Tensor, Variable):
        for name, func in _METHODS.items():
            if name not in cls.__dict__:
                setattr(cls, name, func)
    Tensor.T = property(_transpose_all)


bind()
