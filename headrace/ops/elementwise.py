"""Elementwise binary ops with Paddle's ``axis`` broadcasting, and comparisons.

``axis=-1`` is NumPy broadcasting; ``axis=k`` aligns the lower-rank operand with the other's dims
starting at ``k`` (e.g. X [N, C, H, W] + Y [C] with axis=1 adds a per-channel bias).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_
from ..core.errors import DTypeError, fmt_shape
from .infer_helpers import BroadcastError, aligned_shapes, broadcast_shape, describe_broadcast
from .gradrule import NO_GRADIENT, grad_slot, standard_rule
from .registry import optional, register, register_grad


def _infer_binary(out_dtype=None):
    def infer(ctx):
        dtype = ctx.check_same_dtype("X", "Y")
        x_shape, y_shape, axis = ctx.shape("X"), ctx.shape("Y"), ctx.attr("axis")
        try:
            shape = broadcast_shape(x_shape, y_shape, axis)
        except BroadcastError:
            ctx.fail("Y", describe_broadcast(x_shape, y_shape, axis), fmt_shape(y_shape))
        ctx.set("Out", shape, out_dtype or dtype)
    return infer


def _aligned(x, y, axis):
    """Reshape X or Y for NumPy broadcasting per the ``axis`` rule (no copy)."""
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    xs, ys = aligned_shapes(x.shape, y.shape, axis)
    return x.reshape(xs), y.reshape(ys)


def _int_divide(x, y):
    """Integer division truncating toward zero, as the reference's integer kernels do."""
    if np.any(y == 0):
        raise ZeroDivisionError("integer division by zero")
    q = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -q, q).astype(np.result_type(x, y))


def _divide(x, y):
    if x.dtype.kind in "iu":
        return _int_divide(x, y)
    return np.divide(x, y)


_BINARY = {
    "elementwise_add": (np.add, "Out = X + Y"),
    "elementwise_sub": (np.subtract, "Out = X - Y"),
    "elementwise_mul": (np.multiply, "Out = X * Y"),
    "elementwise_div": (_divide, "Out = X / Y (integers truncate toward zero)"),
    "elementwise_max": (np.maximum, "Out = max(X, Y)"),
    "elementwise_min": (np.minimum, "Out = min(X, Y)"),
    "elementwise_pow": (np.power, "Out = X ** Y"),
}


def _binary_kernel(fn):
    def kernel(ins, attrs):
        x, y = _aligned(ins["X"], ins["Y"], attrs["axis"])
        out = fn(x, y)
        return {"Out": out if type(out) is np.ndarray else np.asarray(out)}  # 0-D inputs give a scalar
    return kernel


def unbroadcast(grad: np.ndarray, aligned_shape, shape) -> np.ndarray:
    """Sum ``grad`` (the output's shape) down to an operand of ``shape`` whose broadcast-aligned
    shape is ``aligned_shape``: the gradient of broadcasting is summation."""
    if grad.shape == tuple(shape):
        return grad
    lead = grad.ndim - len(aligned_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(aligned_shape)
                                      if d == 1 and grad.shape[lead + i] != 1)
    out = grad.sum(axis=axes, keepdims=True) if axes else grad
    return out.reshape(shape)


def _grad_kernel(dx_fn, dy_fn, shape_only):
    """An elementwise gradient kernel: ``dx_fn(x, y, out, dout)`` / ``dy_fn(...)`` give the
    gradients at the output's shape (x, y aligned for broadcasting); they are then summed down
    to each operand's shape.  Operands in ``shape_only`` arrive without data and are passed as
    None."""

    def kernel(ins, attrs, wanted):
        x_in, y_in = ins["X"], ins["Y"]
        xs, ys = aligned_shapes(x_in.shape, y_in.shape, attrs["axis"])
        x = None if "X" in shape_only else x_in.reshape(xs)
        y = None if "Y" in shape_only else y_in.reshape(ys)
        out, dout = ins.get("Out"), ins[grad_slot("Out")]
        result = {}
        if grad_slot("X") in wanted:
            result[grad_slot("X")] = np.asarray(unbroadcast(dx_fn(x, y, out, dout), xs, x_in.shape))
        if grad_slot("Y") in wanted:
            result[grad_slot("Y")] = np.asarray(unbroadcast(dy_fn(x, y, out, dout), ys, y_in.shape))
        return result
    return kernel


def _neg(a):
    return np.negative(a)


# forward type: (dX at the output's shape, dY at the output's shape, extra inputs the grad op reads,
#                inputs needed only for their shape)
_GRADS = {
    "elementwise_add": (lambda x, y, o, d: d, lambda x, y, o, d: d, (), ("X", "Y")),
    "elementwise_sub": (lambda x, y, o, d: d, lambda x, y, o, d: _neg(d), (), ("X", "Y")),
    "elementwise_mul": (lambda x, y, o, d: d * y, lambda x, y, o, d: d * x, (), ()),
    "elementwise_div": (lambda x, y, o, d: d / y, lambda x, y, o, d: -d * o / y, ("Out",), ("X",)),
    "elementwise_max": (lambda x, y, o, d: d * (x > y), lambda x, y, o, d: d * (x <= y), (), ()),
    "elementwise_min": (lambda x, y, o, d: d * (x < y), lambda x, y, o, d: d * (x >= y), (), ()),
    "elementwise_pow": (lambda x, y, o, d: d * y * np.power(x, y - 1),
                        lambda x, y, o, d: d * o * np.log(x), ("Out",), ()),
}

for _type, (_fn, _doc) in _BINARY.items():
    _dx, _dy, _extra, _shape_only = _GRADS[_type]
    register(
        _type,
        inputs=["X", "Y"],
        outputs=["Out"],
        attrs={"axis": -1},
        infer=_infer_binary(),
        kernel=_binary_kernel(_fn),
        grad=standard_rule(f"{_type}_grad", inputs=("X", "Y"), outputs=_extra, input_grads=("X", "Y")),
        doc=_doc,
    )
    register_grad(
        f"{_type}_grad",
        grad_of=_type,
        inputs=["X", "Y", *_extra, grad_slot("Out")],
        outputs=[optional(grad_slot("X")), optional(grad_slot("Y"))],
        views={grad_slot("X"): grad_slot("Out"), grad_slot("Y"): grad_slot("Out")},
        attrs={"axis": -1},
        like={grad_slot("X"): "X", grad_slot("Y"): "Y"},
        kernel=_grad_kernel(_dx, _dy, _shape_only),
        no_need_buffer=_shape_only,
    )

_COMPARE = {
    "less_than": np.less,
    "less_equal": np.less_equal,
    "greater_than": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}

for _type, _fn in _COMPARE.items():
    register(
        _type,
        inputs=["X", "Y"],
        outputs=["Out"],
        attrs={"axis": -1, "force_cpu": False},
        infer=_infer_binary(out_dtype=bool_),
        kernel=_binary_kernel(_fn),
        grad=NO_GRADIENT,
        doc=f"Out = {_fn.__name__}(X, Y), a bool tensor",
    )


def check_float(ctx, slot="X"):
    dtype = ctx.dtype(slot)
    if not dtype.is_floating:
        ctx.fail(slot, "a floating-point dtype", str(dtype), error=DTypeError)
    return dtype
