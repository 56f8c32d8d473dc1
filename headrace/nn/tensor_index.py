"""Indexing (``x[index]``, ``x[index] = value``) and the in-place ``_`` variants, both modes.

Reading.  Ints and step-1 slices (with ``...``) run the ``slice`` op, as before; any other index
(slices with steps, negative ones included, ``None``, bool masks, integer lists/arrays/tensors)
runs the ``getitem`` op with NumPy's indexing rules (``ops/index_items.py``).  Its gradient
accumulates: an element read twice gets both contributions.

Writing and versions.  In eager mode ``x[index] = value`` and every ``paddle.<op>_(x, ...)`` /
``x.<op>_(...)`` compute the out-of-place result (op ``setitem``, or the op itself) and then make
``x`` *be* that result: x takes its data, its place in the autograd graph and its
``stop_gradient``, and ``x.inplace_version`` goes up by one.  Consequences, by design:

- gradients are right whatever happened before: ops that read x earlier saved the old array, which
  is never overwritten (the reference raises an error in backward when a saved tensor was modified);
- the gradient of ``x[index] = value`` reaches the old x everywhere except at ``index`` and reaches
  ``value`` (summed over broadcasting; an update overwritten by a later duplicate index gets none);
- a leaf tensor that requires a gradient cannot be modified in place (``ValueError``, as the
  reference), except under ``paddle.no_grad()`` (e.g. initialising a parameter);
- other tensors that shared x's data (a view from ``x[0:2]``) keep the old values (the reference
  before 2.6 also copied on slicing).

In static mode the ``_`` variants are their out-of-place functions with a warning (as the
reference).  ``x[index] = value`` appends a ``setitem`` op writing a new variable, and the Python
object ``x`` from then on stands for it (the old variable keeps its name and its readers), so
static autodiff differentiates through it like any op; a persistable ``x`` (a parameter) is
written in place instead.
"""
from __future__ import annotations

import numbers
import warnings
import weakref

import numpy as np

from ..core import context
from ..core.variable import Variable
from ..eager import tape
from ..eager.tensor import Tensor
from ..ops.apply import apply_op, apply_op_single
from . import tensor as T
from . import tensor_methods

_VERSIONS: dict = {}   # id(tensor) -> (weakref, version); entries leave with their tensor


def inplace_version(x) -> int:
    """How many in-place modifications an eager tensor has seen."""
    entry = _VERSIONS.get(id(x))
    return entry[1] if entry is not None and entry[0]() is x else 0


def _bump(x) -> None:
    key = id(x)
    _VERSIONS[key] = (weakref.ref(x, lambda _, k=key: _VERSIONS.pop(k, None)), inplace_version(x) + 1)


def _check_leaf(x, what):
    if x.is_leaf and not x.stop_gradient and tape.grad_enabled and not tape.computed_while_tracking(x):
        raise ValueError(f"{what}: leaf Tensor {x.name!r} requires a gradient (stop_gradient=False), so it "
                         "cannot be modified in place; use the out-of-place function, or paddle.no_grad()")


def become(x, out):
    """Make eager tensor ``x`` the result ``out`` (data, graph position, stop_gradient); returns x."""
    x._value = out._value
    x._node, x._out_index = out._node, out._out_index
    x.stop_gradient = out.stop_gradient
    _bump(x)
    return x


def make_inplace(func, name, reshape=False):
    """``name`` (e.g. ``tanh_``): ``func`` applied to x, then x becomes the result (eager); static
    mode warns and returns ``func``'s result.  Unless ``reshape`` (reshape_, cast_ ...), the result
    must have x's shape and is cast to x's dtype (comparisons keep x's dtype)."""
    def inplace(x, *args, **kwargs):
        if context.in_static_mode() or not isinstance(x, Tensor):
            warnings.warn(f"In static graph mode, {name}() is the same as {name[:-1]}() and does not perform "
                          "inplace operation.", stacklevel=2)
            return func(x, *args, **kwargs)
        _check_leaf(x, name)
        out = func(x, *args, **kwargs)
        if reshape:
            return become(x, out)
        if list(out.shape) != list(x.shape):
            raise ValueError(f"{name}(): the result has shape {out.shape}, x has {x.shape}: an in-place "
                             "operation cannot change the shape")
        if out.dtype != x.dtype:
            out = T.cast(out, x.dtype)
        return become(x, out)
    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place ``{name[:-1]}``: x becomes the result (eager; see ``nn/tensor_index.py``)."
    return inplace


# --- the index -----------------------------------------------------------------------------------
def _plain_int(v) -> bool:
    return type(v) is int or (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)))


def _simple(items) -> bool:
    """Ints, step-1 slices with int bounds and ``...`` only (the ``slice`` op's indices)."""
    for item in items:
        if type(item) is int or item is Ellipsis:
            continue
        if type(item) is slice:
            if item.step not in (None, 1):
                return False
            for bound in (item.start, item.stop):
                if bound is not None and not _plain_int(bound):
                    return False
            continue
        if not _plain_int(item):
            return False
    return True


def _bound(v):
    if v is None or isinstance(v, numbers.Integral):
        return None if v is None else int(v)
    if isinstance(v, Tensor):
        return int(v.item())
    raise NotImplementedError(f"a slice bound given as a static Variable is not supported yet: {v!r}")


def _encode(items, like):
    """(the ``index`` attribute, the index tensors) for ``items``."""
    spec, tensors = [], []
    for item in items:
        if item is None:
            spec.append(["n"])
        elif item is Ellipsis:
            spec.append(["e"])
        elif isinstance(item, (bool, np.bool_)):
            raise TypeError(f"a Python bool is not a supported index ({item!r}); use a bool tensor")
        elif isinstance(item, numbers.Integral):
            spec.append(["i", int(item)])
        elif isinstance(item, slice):
            step = _bound(item.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            spec.append(["s", _bound(item.start), _bound(item.stop), step])
        else:
            tensors.append(_index_tensor(item))
            spec.append(["t", len(tensors) - 1])
    return spec, tensors


def _index_tensor(item):
    if isinstance(item, (Tensor, Variable)):
        if str(item.dtype) not in ("bool", "int32", "int64"):
            raise TypeError(f"an index tensor must be bool, int32 or int64, got {item.dtype}")
        return item
    array = np.asarray(item)
    if array.dtype.kind not in "biu":
        raise TypeError(f"unsupported index {item!r}: ints, slices, None, ..., bool masks and integer "
                        "lists/arrays/tensors are")
    array = array.astype(np.bool_ if array.dtype.kind == "b" else np.int64)
    return T.assign(array) if context.in_static_mode() else Tensor(array)


def _items(index):
    return index if isinstance(index, tuple) else (index,)


def getitem(x, index):
    """``x[index]`` (see the module docstring)."""
    items = _items(index)
    if _simple(items):
        return tensor_methods.getitem(x, index)
    spec, tensors = _encode(items, x)
    inputs = {"X": x, "Indices": tensors} if tensors else {"X": x}
    return apply_op_single("getitem", inputs, {"index": spec}, name_key=T._key("getitem"))


def _value_of(x, value):
    if isinstance(value, (Tensor, Variable)):
        return (value if value.dtype == x.dtype else T.cast(value, x.dtype)), None
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return None, float(value)
    array = np.asarray(value, dtype=x.dtype.numpy if hasattr(x.dtype, "numpy") else None)
    return (T.assign(array) if context.in_static_mode() else Tensor(array)), None


def setitem(x, index, value):
    """``x[index] = value`` (see the module docstring)."""
    spec, tensors = _encode(_items(index), x)
    tensor_value, number = _value_of(x, value)
    inputs = {"X": x}
    if tensors:
        inputs["Indices"] = tensors
    attrs = {"index": spec}
    if tensor_value is not None:
        inputs["Value"] = tensor_value
    else:
        attrs["value"] = number
    if context.in_static_mode():
        if x.persistable:   # a parameter or other persistable: written in place, as the reference
            apply_op("setitem", inputs, attrs, outputs={"Out": x})
        else:
            _rebind_static(x, apply_op_single("setitem", inputs, attrs, name_key=T._key("setitem")))
        return
    _check_leaf(x, "__setitem__")
    become(x, apply_op_single("setitem", inputs, attrs))


def _rebind_static(x, out):
    """Make the Python object ``x`` stand for the new variable ``out`` and ``out`` for the old one:
    ops refer to variables by name, so the program keeps reading the old value where it did, and
    every later use of ``x`` reads the written one (autodiff sees two distinct variables)."""
    old_name, new_name = x.name, out.name
    x.__dict__, out.__dict__ = out.__dict__, x.__dict__
    out.block.vars[old_name] = out
    x.block.vars[new_name] = x


def bind() -> None:
    """``x[...]`` reading on both classes (replacing the basic version), writing, ``inplace_version``."""
    for cls in (Tensor, Variable):
        cls.__getitem__ = getitem
        cls.__setitem__ = setitem
    Tensor.inplace_version = property(inplace_version)
