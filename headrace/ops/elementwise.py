"""Elementwise binary ops with Paddle's ``axis`` broadcasting, and comparisons.

``axis=-1`` is NumPy broadcasting; ``axis=k`` aligns the lower-rank operand with the other's dims
starting at ``k`` (e.g. X [N, C, H, W] + Y [C] with axis=1 adds a per-channel bias).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_
from ..core.errors import DTypeError, fmt_shape
from .infer_helpers import BroadcastError, aligned_shapes, broadcast_shape, describe_broadcast
from .registry import register


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


for _type, (_fn, _doc) in _BINARY.items():
    register(
        _type,
        inputs=["X", "Y"],
        outputs=["Out"],
        attrs={"axis": -1},
        infer=_infer_binary(),
        kernel=_binary_kernel(_fn),
        doc=_doc,
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
        doc=f"Out = {_fn.__name__}(X, Y), a bool tensor",
    )


def check_float(ctx, slot="X"):
    dtype = ctx.dtype(slot)
    if not dtype.is_floating:
        ctx.fail(slot, "a floating-point dtype", str(dtype), error=DTypeError)
    return dtype
