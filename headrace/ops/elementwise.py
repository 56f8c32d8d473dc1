"""Elementwise binary ops with Paddle's ``axis`` broadcasting, and comparisons.

``axis=-1`` is NumPy broadcasting; ``axis=k`` aligns the lower-rank operand with the other's dims
starting at ``k`` (e.g. X [N, C, H, W] + Y [C] with axis=1 adds a per-channel bias).

Buffers (``ops/kernel.py``): the arithmetic ops may write ``Out`` into ``X``'s buffer when X dies
there (``inplace``), and every kernel here computes into a handed ``out`` buffer when it has the
full broadcast shape and the output dtype (integer division excepted: it allocates).  Gradients
of add/sub pass ``Out@GRAD`` through (a view) where no summation is needed; the other gradients
take handed buffers for their full-shape results.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_
from ..core.errors import DTypeError, fmt_shape
from .infer_helpers import BroadcastError, aligned_shapes, broadcast_shape, describe_broadcast
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .registry import register
from . import parallel


def infer_broadcast(ctx):
    """Shape inference of a binary op with the reference's ``axis`` broadcasting: X and Y share
    a dtype and Y broadcasts onto X; returns ``(out_shape, dtype)``."""
    dtype = ctx.check_same_dtype("X", "Y")
    x_shape, y_shape, axis = ctx.shape("X"), ctx.shape("Y"), ctx.attr("axis")
    try:
        return broadcast_shape(x_shape, y_shape, axis), dtype
    except BroadcastError:
        ctx.fail("Y", describe_broadcast(x_shape, y_shape, axis), fmt_shape(y_shape))


def _infer_binary(out_dtype=None):
    def infer(ctx):
        shape, dtype = infer_broadcast(ctx)
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


def _divide(x, y, out=None):
    if x.dtype.kind in "iu":
        return _int_divide(x, y)
    return np.divide(x, y, out=out)


_BINARY = {
    "elementwise_add": (np.add, "Out = X + Y"),
    "elementwise_sub": (np.subtract, "Out = X - Y"),
    "elementwise_mul": (np.multiply, "Out = X * Y"),
    "elementwise_div": (_divide, "Out = X / Y (integers truncate toward zero)"),
    "elementwise_max": (np.maximum, "Out = max(X, Y)"),
    "elementwise_min": (np.minimum, "Out = min(X, Y)"),
    "elementwise_pow": (np.power, "Out = X ** Y"),
}


def _binary_kernel(fn, out_dtype=None):
    def kernel(ins, attrs, ctx):
        x, y = _aligned(ins["X"], ins["Y"], attrs["axis"])
        buf = None
        if ctx.out:
            dtype = out_dtype or np.result_type(x, y)
            buf = ctx.buffer("Out", np.broadcast_shapes(x.shape, y.shape), dtype)
        return {"Out": binary(fn, x, y, buf, out_dtype)}
    return kernel


def binary(fn, x, y, buf=None, out_dtype=None) -> np.ndarray:
    """``fn(x, y)`` (x, y already aligned for broadcasting) into ``buf`` or a fresh array, as the
    element-wise kernels compute it: piece by piece on several threads when large (the same bits
    whatever the thread count).  ``buf`` may be ``x`` itself (each piece is read before written)."""
    if parallel.worth(max(x.size, y.size)) and x.dtype.kind == "f" \
            and (buf is not None or x.flags.c_contiguous and y.flags.c_contiguous):
        return _split_binary(fn, x, y, out_dtype, buf)
    result = fn(x, y) if buf is None else fn(x, y, out=buf)
    return result if type(result) is np.ndarray else np.asarray(result)  # 0-D gives a scalar


def _split_binary(fn, x, y, out_dtype, buf):
    """``fn(x, y)`` into ``buf`` (or a fresh C-contiguous array: the layout ``fn`` gives for
    C-contiguous operands), piece by piece on several threads."""
    if buf is None:
        buf = np.empty(np.broadcast_shapes(x.shape, y.shape), out_dtype or np.result_type(x, y))
    return parallel.chunked(lambda a, b, out: fn(a, b, out=out), buf, x, y)


def unbroadcast(grad: np.ndarray, aligned_shape, shape) -> np.ndarray:
    """Sum ``grad`` (the output's shape) down to an operand of ``shape`` whose broadcast-aligned
    shape is ``aligned_shape``: the gradient of broadcasting is summation."""
    if grad.shape == tuple(shape):
        return grad if type(grad) is np.ndarray else np.asarray(grad)
    grad_shape = grad.shape
    if grad_shape[1:] == tuple(aligned_shape) == tuple(shape):   # only the leading axis summed (a Linear's
        return np.asarray(_add_reduce(grad, axis=0))              # bias): no axes to find
    lead = len(grad_shape) - len(aligned_shape)
    axes = list(range(lead))
    for i, d in enumerate(aligned_shape, lead):   # (a loop: a generator costs 0.5 us a call)
        if d == 1 and grad_shape[i] != 1:
            axes.append(i)
    axes = tuple(axes)
    out = grad if not axes else _channel_sums(grad, axes)
    if out is None:   # np.sum's own reduction without its Python wrapper (1 us of a 2.8 us call on small arrays)
        out = _add_reduce(grad, axis=axes)
    return np.asarray(out.reshape(shape))


_add_reduce = np.add.reduce


def _channel_sums(grad, axes):
    """The sum over ``axes`` when they are every axis but one run in the middle (a per-channel
    bias's gradient: [N, C, H, W] -> [C]): the rows of the trailing axes summed first, pieces of
    the leading axes on threads (each row alone: the same bits for any thread count), then those
    sums over the leading axes.  None for other axes (the last axis kept: rows of it are added
    whole, the plain sum is as fast)."""
    if axes[-1] != grad.ndim - 1 or grad.dtype not in (np.float32, np.float64) or not grad.size:
        return None               # the last axis kept (a Linear's bias: the common case, first)
    kept = [i for i in range(grad.ndim) if i not in axes]
    if not kept or kept[-1] - kept[0] + 1 != len(kept):
        return None
    lead, run = int(np.prod(grad.shape[:kept[0]])), int(np.prod(grad.shape[kept[0]:kept[-1] + 1]))
    rows = grad.reshape(lead, run, -1)
    sums = np.empty((lead, run), grad.dtype)

    def piece(start, stop):
        np.add.reduce(rows[start:stop], axis=-1, out=sums[start:stop])
    parallel.split_range(piece, lead, grad.size)
    return sums.sum(axis=0)


def _grad_kernel(dx_fn, dy_fn, shape_only):
    """An elementwise gradient kernel: ``dx_fn(x, y, out, dout, buf)`` / ``dy_fn(...)`` give the
    gradients at the output's shape (x, y aligned for broadcasting), computed into ``buf`` when
    it is not None; they are then summed down to each operand's shape.  A handed buffer is used
    only for an operand of the output's full shape (no summation).  Operands in ``shape_only``
    arrive without data and are passed as None."""

    x_only, y_only = "X" in shape_only, "Y" in shape_only

    def kernel(ins, attrs, ctx):
        x_in, y_in = ins["X"], ins["Y"]
        xs, ys = aligned_shapes(x_in.shape, y_in.shape, attrs["axis"])
        x = None if x_only else x_in.reshape(xs)
        y = None if y_only else y_in.reshape(ys)
        o, dout = ins.get("Out"), ins[_DOUT]
        result = {}
        for slot, fn, operand, aligned in ((_DX, dx_fn, x_in, xs), (_DY, dy_fn, y_in, ys)):
            if slot not in ctx.wanted:
                continue
            if fn is _pass:
                full = dout
            else:
                buf = ctx.buffer(slot, dout.shape, dout.dtype) if ctx.out and operand.shape == dout.shape else None
                full = _split_grad(fn, x, y, o, dout, buf)
            result[slot] = unbroadcast(full, aligned, operand.shape)
        return result
    return kernel


_DX, _DY, _DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")


def _split_grad(fn, x, y, o, dout, buf):
    """``fn(x, y, o, dout, buf)``; for a large float ``dout``, piece by piece on several threads
    into ``buf`` or a fresh C-contiguous array (taken only when that is the layout ``fn`` would
    give); operands that are None (not read) stay None."""
    present = [i for i, a in enumerate((x, y, o)) if a is not None]
    contiguous = all(a.flags.c_contiguous for a in (x, y, o, dout) if a is not None)
    if not (parallel.worth(dout.size) and dout.dtype.kind == "f" and (contiguous or buf is not None)):
        return fn(x, y, o, dout, buf)

    def piece(*parts):
        args = [None, None, None]
        for i, part in zip(present, parts):
            args[i] = part
        out = parts[-1]
        value = fn(*args, parts[-2], out)
        if value is not out:
            np.copyto(out, value)
    out = np.empty(dout.shape, dout.dtype) if buf is None else buf
    return parallel.chunked(piece, out, *[(x, y, o)[i] for i in present], dout)


def _pass(x, y, o, d, buf):
    return d


def _neg(x, y, o, d, buf):
    return np.negative(d, out=buf)


def _div_dy(x, y, o, d, buf):
    t = np.negative(d)                 # -d * o / y, evaluated left to right
    t = np.multiply(t, o, out=t if type(t) is np.ndarray else None)
    return np.divide(t, y, out=buf)


def _pow_dx(x, y, o, d, buf):
    return np.multiply(d * y, np.power(x, y - 1), out=buf)


def _pow_dy(x, y, o, d, buf):
    return np.multiply(d * o, np.log(x), out=buf)


# forward type: (dX at the output's shape, dY at the output's shape, extra inputs the grad op reads,
#                inputs needed only for their shape, gradient slots that may pass Out@GRAD through)
_GRADS = {
    "elementwise_add": (_pass, _pass, (), ("X", "Y"), ("X", "Y")),
    "elementwise_sub": (_pass, _neg, (), ("X", "Y"), ("X",)),
    "elementwise_mul": (lambda x, y, o, d, b: np.multiply(d, y, out=b),
                        lambda x, y, o, d, b: np.multiply(d, x, out=b), (), (), ()),
    "elementwise_div": (lambda x, y, o, d, b: np.divide(d, y, out=b), _div_dy, ("Out",), ("X",), ()),
    "elementwise_max": (lambda x, y, o, d, b: np.multiply(d, x > y, out=b),
                        lambda x, y, o, d, b: np.multiply(d, x <= y, out=b), (), (), ()),
    "elementwise_min": (lambda x, y, o, d, b: np.multiply(d, x < y, out=b),
                        lambda x, y, o, d, b: np.multiply(d, x >= y, out=b), (), (), ()),
    "elementwise_pow": (_pow_dx, _pow_dy, ("Out",), (), ()),
}

for _type, (_fn, _doc) in _BINARY.items():
    _dx, _dy, _extra, _shape_only, _through = _GRADS[_type]
    register(
        _type,
        inputs=["X", "Y"],
        outputs=["Out"],
        attrs={"axis": -1},
        infer=_infer_binary(),
        kernel=_binary_kernel(_fn),
        grad=Gradient(_grad_kernel(_dx, _dy, _shape_only), inputs=("X", "Y"), outputs=_extra,
                      input_grads=("X", "Y"), views={grad_slot(s): grad_slot("Out") for s in _through},
                      no_need_buffer=_shape_only, buffers=True),
        inplace={"Out": "X"},
        buffers=True,
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
        kernel=_binary_kernel(_fn, np.dtype(np.bool_)),
        grad=NO_GRADIENT,
        buffers=True,
        doc=f"Out = {_fn.__name__}(X, Y), a bool tensor",
    )


def check_float(ctx, slot="X"):
    dtype = ctx.dtype(slot)
    if not dtype.is_floating:
        ctx.fail(slot, "a floating-point dtype", str(dtype), error=DTypeError)
    return dtype
