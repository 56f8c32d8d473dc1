"""Elementwise math of two tensors, table-driven: each row of ``_BINARY`` is one op (X, Y -> Out,
broadcast as ``elementwise_*`` with the reference's ``axis`` rule; X and Y share a dtype) with its
partial derivatives, registered with its ``<type>_grad`` op; rows of ``_NO_GRAD`` (logical,
bitwise, integer-valued ops) have no gradient.

A differentiable row is ``(forward(x, y), dx(x, y, out, dout), dy(...), dtypes, doc)``; the partial
derivatives are computed at the output's (broadcast) shape and summed down to each operand's shape.

Semantics follow the reference: ``floor_divide`` rounds toward negative infinity and
``remainder`` (``elementwise_mod``) takes the divisor's sign, as Python's ``//`` and ``%``;
integer division by zero is a ``ZeroDivisionError``.  ``fmax``/``fmin`` ignore a NaN operand.
Ties: ``fmax``'s gradient goes to X where X >= Y (or Y is NaN), ``fmin``'s where X <= Y.
``logical_*`` take any dtype (nonzero is True) and give bool.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_, float32, float64, int8, int16, int32, int64, uint8
from ..core.errors import fmt_shape
from .elementwise import infer_broadcast, unbroadcast
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .infer_helpers import aligned_shapes
from .registry import register

FLOATS = (float32, float64)
INTS = (int8, int16, int32, int64, uint8)
NUMBERS = FLOATS + INTS
DX, DY, DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")


def _aligned(x, y, axis):
    xs, ys = aligned_shapes(x.shape, y.shape, axis)
    return x.reshape(xs), y.reshape(ys)


def _int_checked(fn):
    def forward(x, y):
        if x.dtype.kind in "iu" and np.any(y == 0):
            raise ZeroDivisionError("integer division by zero")
        return fn(x, y)
    return forward


def _remainder_dy(x, y, o, d):
    return -d * np.floor_divide(x, y)


def _copysign_dx(x, y, o, d):
    return d * np.sign(x) * np.copysign(1.0, y).astype(x.dtype)


def _zero(x, y, o, d):
    return np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y)), dtype=d.dtype)


def _heaviside_dy(x, y, o, d):
    return d * (x == 0)


# type: (forward, dx, dy, dtypes, doc)
_BINARY = {
    "atan2": (np.arctan2, lambda x, y, o, d: d * y / (x * x + y * y),
              lambda x, y, o, d: -d * x / (x * x + y * y), FLOATS, "Out = atan2(X, Y), the angle of (Y, X)"),
    "hypot": (np.hypot, lambda x, y, o, d: d * x / o, lambda x, y, o, d: d * y / o, FLOATS,
              "Out = sqrt(X**2 + Y**2)"),
    "logaddexp": (np.logaddexp, lambda x, y, o, d: d * np.exp(x - o), lambda x, y, o, d: d * np.exp(y - o),
                  FLOATS, "Out = log(exp(X) + exp(Y)), computed without overflow"),
    "elementwise_fmax": (np.fmax, lambda x, y, o, d: d * ((x >= y) | np.isnan(y)),
                         lambda x, y, o, d: d * ~((x >= y) | np.isnan(y)), NUMBERS,
                         "Out = max(X, Y), ignoring a NaN operand"),
    "elementwise_fmin": (np.fmin, lambda x, y, o, d: d * ((x <= y) | np.isnan(y)),
                         lambda x, y, o, d: d * ~((x <= y) | np.isnan(y)), NUMBERS,
                         "Out = min(X, Y), ignoring a NaN operand"),
    "elementwise_mod": (_int_checked(np.mod), lambda x, y, o, d: d, _remainder_dy, NUMBERS,
                        "Out = X mod Y with the sign of Y (Python's %)"),
    "copysign": (np.copysign, _copysign_dx, _zero, FLOATS, "Out = |X| with the sign of Y"),
    "heaviside": (np.heaviside, _zero, _heaviside_dy, FLOATS, "Out = 0 if X < 0, Y if X == 0, 1 if X > 0"),
}


def _infer(out_dtype=None, allowed=None):
    def infer(ctx):
        if allowed is not None:
            ctx.check_dtype("X", allowed)
        shape, dtype = infer_broadcast(ctx)
        ctx.set("Out", shape, out_dtype or dtype)
    return infer


def _kernel(fn, out_dtype=None):
    def kernel(ins, attrs, ctx):
        x, y = _aligned(ins["X"], ins["Y"], attrs["axis"])
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(fn(x, y))
        return {"Out": out.astype(out_dtype or x.dtype, copy=False)}
    return kernel


def _grad_kernel(op_type, dx_fn, dy_fn):
    def kernel(ins, attrs, ctx):
        x_in, y_in, out, dout = ins["X"], ins["Y"], ins["Out"], ins[DOUT]
        xs, ys = aligned_shapes(x_in.shape, y_in.shape, attrs["axis"])
        x, y = x_in.reshape(xs), y_in.reshape(ys)
        if dout.shape != out.shape:
            raise ValueError(f"op `{op_type}_grad`: `{DOUT}` has shape {fmt_shape(dout.shape)}, "
                             f"Out has {fmt_shape(out.shape)}")
        result = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            for slot, fn, operand, aligned in ((DX, dx_fn, x_in, xs), (DY, dy_fn, y_in, ys)):
                if slot in ctx.wanted:
                    full = np.broadcast_to(np.asarray(fn(x, y, out, dout), dtype=dout.dtype), dout.shape)
                    result[slot] = np.array(unbroadcast(full, aligned, operand.shape), dtype=operand.dtype)
        return result
    return kernel


for _type, (_fn, _dx, _dy, _allowed, _doc) in _BINARY.items():
    register(_type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": -1}, infer=_infer(allowed=_allowed),
             kernel=_kernel(_fn),
             grad=Gradient(_grad_kernel(_type, _dx, _dy), inputs=("X", "Y"), outputs=("Out",),
                           input_grads=("X", "Y")),
             doc=_doc)


def _floor_divide(x, y):
    if x.dtype.kind in "iu":
        return np.floor_divide(x, y)
    return np.floor(x / y)


def _nextafter(x, y):
    return np.nextafter(x, y)


# type: (forward, input dtypes, output dtype (None: X's), doc)
_NO_GRAD = {
    "elementwise_floordiv": (_int_checked(_floor_divide), NUMBERS, None,
                             "Out = floor(X / Y) (Python's //); no gradient"),
    "logical_and": (np.logical_and, NUMBERS + (bool_,), bool_, "Out = X and Y (nonzero is True)"),
    "logical_or": (np.logical_or, NUMBERS + (bool_,), bool_, "Out = X or Y (nonzero is True)"),
    "logical_xor": (np.logical_xor, NUMBERS + (bool_,), bool_, "Out = X xor Y (nonzero is True)"),
    "bitwise_and": (np.bitwise_and, INTS + (bool_,), None, "Out = X & Y"),
    "bitwise_or": (np.bitwise_or, INTS + (bool_,), None, "Out = X | Y"),
    "bitwise_xor": (np.bitwise_xor, INTS + (bool_,), None, "Out = X ^ Y"),
    "gcd": (np.gcd, INTS, None, "Out = the greatest common divisor of X and Y (non-negative)"),
    "lcm": (np.lcm, INTS, None, "Out = the least common multiple of X and Y (non-negative)"),
    "nextafter": (_nextafter, FLOATS, None, "Out = the next representable value after X toward Y"),
    "bitwise_left_shift": (np.left_shift, INTS, None, "Out = X << Y"),
    "bitwise_right_shift": (np.right_shift, INTS, None, "Out = X >> Y (arithmetic: the sign is kept)"),
}

for _type, (_fn, _allowed, _out, _doc) in _NO_GRAD.items():
    register(_type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": -1}, infer=_infer(_out, _allowed),
             kernel=_kernel(_fn, None if _out is None else np.dtype(_out.numpy)), grad=NO_GRADIENT, doc=_doc)
