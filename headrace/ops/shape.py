"""Ops that move data without computing on it: reshape, transpose, squeeze, unsqueeze and
flatten (concat, split and slice are in ``concat_slice.py``).

The ``*2`` ops (and ``flatten_contiguous_range``) also output ``XShape``, the reference system's
shape carrier for their gradient ops: shape ``[0] + X.shape``, holding no data.

Each shape rule is one pure function of (input shape, attrs) used by both ``infer`` (dims may be
-1) and the kernel (concrete dims), so build-time and run-time shapes follow the same rule.  A
rule raises ``BadShape`` for a certain mismatch; ``infer`` turns it into a typed error naming the op.
Kernels return NumPy views where possible (reshape, transpose, split, slice, squeeze).

Gradients: ``reshape2``/``squeeze2``/``unsqueeze2``/``flatten_contiguous_range`` read only ``XShape``
(shape only) and ``Out@GRAD``, which they reshape back (a view); ``transpose2_grad`` transposes
``Out@GRAD`` by the inverse permutation (a view).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import ShapeError, fmt_shape
from .gradrule import Gradient, grad_slot
from .infer_helpers import normalize_axes, prod
from .registry import REQUIRED, register

X_GRAD, OUT_GRAD = grad_slot("X"), grad_slot("Out")


class BadShape(ValueError):
    """A shape rule's certain mismatch: ``attr`` names the attribute at fault (None: an input)."""

    def __init__(self, attr, expected, got):
        super().__init__(expected)
        self.attr, self.expected, self.got = attr, expected, got


def raise_bad_shape(ctx, bad: BadShape, slot="X"):
    if bad.attr is None:
        ctx.fail(slot, bad.expected, bad.got)
    ctx.fail_attr(bad.attr, bad.expected, bad.got)


def axis_index(axis, rank, attr, shape):
    """One axis made non-negative; valid range [-rank, rank)."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise BadShape(attr, f"axes in [{-rank}, {rank}) for an input of shape {fmt_shape(shape)}", axis)
    return axis % rank


def _xshape(shape):
    return (0,) + tuple(shape)


def _set_with_xshape(ctx, out_shape):
    ctx.set("Out", out_shape, ctx.dtype("X"))
    ctx.set("XShape", _xshape(ctx.shape("X")), ctx.dtype("X"))


def _xshape_value(x):
    return np.empty(_xshape(x.shape), dtype=x.dtype)


def _view_infer(rule, *attrs):
    """``infer`` of an X -> Out, XShape op whose out shape is ``rule(x_shape, *attrs)``."""
    def infer(ctx):
        try:
            out = rule(ctx.shape("X"), *(ctx.attr(a) for a in attrs))
        except BadShape as bad:
            raise_bad_shape(ctx, bad)
        _set_with_xshape(ctx, out)
    return infer


def _view_kernel(rule, *attrs):
    """Kernel of an X -> Out, XShape op: X reshaped (a view when possible) to the rule's shape."""
    def kernel(ins, op_attrs, ctx):
        x = ins["X"]
        out = rule(x.shape, *(op_attrs[a] for a in attrs))
        return {"Out": np.reshape(x, out), "XShape": _xshape_value(x)}
    return kernel


# --- gradients of the X -> Out, XShape view ops: Out@GRAD reshaped back to XShape[1:] ------------
def _xshape_grad_infer(ctx):
    ctx.set(X_GRAD, ctx.shape("XShape")[1:], ctx.dtype("XShape"))


def _reshape_back_kernel(op_type):
    def kernel(ins, attrs, ctx):
        if X_GRAD not in ctx.wanted:
            return {}
        x_shape, dout = ins["XShape"].shape[1:], ins[OUT_GRAD]
        if dout.size != prod(x_shape):
            raise ShapeError(f"op `{op_type}`: input `{OUT_GRAD}` of shape {fmt_shape(dout.shape)} "
                             f"cannot be reshaped back to X's shape {fmt_shape(x_shape)}")
        return {X_GRAD: np.reshape(dout, x_shape)}
    return kernel


def _xshape_gradient(op_type):
    """The gradient of a view op: ``<op_type>_grad`` reads XShape and Out@GRAD only."""
    return Gradient(_reshape_back_kernel(f"{op_type}_grad"), inputs=(), outputs=("XShape",),
                    infer=_xshape_grad_infer, views={X_GRAD: OUT_GRAD}, no_need_buffer=["XShape"],
                    inplace={X_GRAD: OUT_GRAD})


# --- reshape2 ------------------------------------------------------------------------------------
def reshape_shape(x_shape, shape):
    """Out shape of reshape: 0 copies X's dim at that index, one -1 is inferred.

    Dims copied by 0 cancel on both sides, so X [-1, 4, 3] with [0, -1] gives [-1, 12].
    """
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise BadShape("shape", "at most one -1 (inferred) entry", shape)
    out = []
    for i, s in enumerate(shape):
        if s == 0:
            if i >= len(x_shape):
                raise BadShape("shape", f"0 (copy a dim) only at positions < {len(x_shape)}, the rank of X "
                                    f"{fmt_shape(x_shape)}", shape)
            out.append(x_shape[i])
        elif s < -1:
            raise BadShape("shape", "positive dims, 0 (copy) or one -1 (inferred)", shape)
        else:
            out.append(s)
    rest = [d for i, d in enumerate(x_shape) if i >= len(shape) or shape[i] != 0]
    x_rest = prod(rest)
    out_rest = prod(s for s in shape if s > 0)
    mismatch = BadShape(None, f"a shape whose element count fits `shape`={shape} (X's dims at the 0 entries "
                          "are copied)", f"shape {fmt_shape(x_shape)}")
    if -1 in shape:
        if x_rest != -1:
            if out_rest == 0 or x_rest % out_rest:
                raise mismatch
            out[shape.index(-1)] = x_rest // out_rest
        else:
            out[shape.index(-1)] = -1
    elif x_rest != -1:
        if x_rest != out_rest:
            raise mismatch
    else:  # X has unknown dims: its known part must divide the requested count
        known = prod(d for d in rest if d != -1)
        if known and out_rest % known:
            raise mismatch
    return tuple(out)


register(
    "reshape2",
    inputs=["X"],
    outputs=["Out", "XShape"],
    views={"Out": "X"},
    attrs={"shape": REQUIRED},
    infer=_view_infer(reshape_shape, "shape"),
    kernel=_view_kernel(reshape_shape, "shape"),
    grad=_xshape_gradient("reshape2"),
    inplace={"Out": "X"},
    doc="Out = X reshaped to `shape` (0 copies X's dim, one -1 is inferred); a view when possible",
)


# --- transpose2 ----------------------------------------------------------------------------------
def _transpose_infer(ctx):
    x_shape, axis = ctx.shape("X"), list(ctx.attr("axis"))
    try:
        perm = normalize_axes(axis, len(x_shape), "axis") if x_shape else list(axis)
    except ValueError:
        perm = None
    if perm is None or sorted(perm) != list(range(len(x_shape))):
        ctx.fail_attr("axis", f"a permutation of 0..{len(x_shape) - 1} for X of shape {fmt_shape(x_shape)}", axis)
    _set_with_xshape(ctx, tuple(x_shape[a] for a in perm))




def _inverse_perm(axis, rank):
    inverse = [0] * rank
    for i, a in enumerate(axis):
        inverse[int(a) % rank] = i
    return inverse


def _transpose_grad_infer(ctx):
    dout_shape, axis = ctx.shape(OUT_GRAD), list(ctx.attr("axis"))
    if len(axis) != len(dout_shape):
        ctx.fail_attr("axis", f"a permutation of rank {len(dout_shape)}, the rank of {OUT_GRAD}", axis)
    ctx.set(X_GRAD, [dout_shape[i] for i in _inverse_perm(axis, len(axis))], ctx.dtype(OUT_GRAD))


def _transpose_grad_kernel(ins, attrs, ctx):
    """dX = Out@GRAD transposed by the inverse permutation (a view)."""
    if X_GRAD not in ctx.wanted:
        return {}
    dout, axis = ins[OUT_GRAD], attrs["axis"]
    if len(axis) != dout.ndim:
        raise ShapeError(f"op `transpose2_grad`: input `{OUT_GRAD}` has rank {dout.ndim}, but axis={list(axis)} "
                         f"has {len(axis)} entries")
    return {X_GRAD: np.transpose(dout, _inverse_perm(axis, dout.ndim))}


register(
    "transpose2",
    inputs=["X"],
    outputs=["Out", "XShape"],
    views={"Out": "X"},
    attrs={"axis": REQUIRED},
    infer=_transpose_infer,
    kernel=lambda ins, attrs, ctx: {"Out": np.transpose(ins["X"], attrs["axis"]), "XShape": _xshape_value(ins["X"])},
    grad=Gradient(_transpose_grad_kernel, inputs=(), attrs=("axis",), infer=_transpose_grad_infer,
                  views={X_GRAD: OUT_GRAD}),
    doc="Out = X with its dims permuted: Out.shape[i] = X.shape[axis[i]] (a view)",
)




# --- squeeze2 / unsqueeze2 -----------------------------------------------------------------------
def squeeze_shape(shape, axes):
    """Dims of size 1 removed: all of them when ``axes`` is empty, else those listed.

    A listed dim whose size is not 1 is kept (as the reference documents); a listed unknown (-1)
    dim is assumed to be 1, an unknown dim is kept when ``axes`` is empty.
    """
    if not axes:
        return tuple(d for d in shape if d != 1)
    listed = {axis_index(a, len(shape), "axes", shape) for a in axes}
    return tuple(d for i, d in enumerate(shape) if not (i in listed and d in (1, -1)))


def _squeeze_kernel(ins, attrs, ctx):
    x = ins["X"]
    if attrs["axes"]:
        drop = {a % x.ndim for a in attrs["axes"]}
        out = np.squeeze(x, axis=tuple(a for a in sorted(drop) if x.shape[a] == 1))
    else:
        out = np.squeeze(x)
    return {"Out": out, "XShape": _xshape_value(x)}


register(
    "squeeze2",
    inputs=["X"],
    outputs=["Out", "XShape"],
    views={"Out": "X"},
    attrs={"axes": []},
    infer=_view_infer(squeeze_shape, "axes"),
    kernel=_squeeze_kernel,
    grad=_xshape_gradient("squeeze2"),
    inplace={"Out": "X"},
    doc="Out = X without its size-1 dims (all of them, or those in `axes`; others listed are kept)",
)


def unsqueeze_shape(shape, axes):
    """Size-1 dims inserted at ``axes`` in order; a negative axis counts against rank + 1."""
    out = list(shape)
    for step, axis in enumerate(axes):
        bound = len(out) + 1
        if not -bound <= int(axis) < bound:
            raise BadShape("axes", f"each axis in [{-bound}, {bound - 1}] when inserted into {fmt_shape(out)} "
                               f"(step {step} on X of shape {fmt_shape(shape)})", list(axes))
        out.insert(int(axis) % bound, 1)
    return tuple(out)


register(
    "unsqueeze2",
    inputs=["X"],
    outputs=["Out", "XShape"],
    views={"Out": "X"},
    attrs={"axes": REQUIRED},
    infer=_view_infer(unsqueeze_shape, "axes"),
    kernel=_view_kernel(unsqueeze_shape, "axes"),
    grad=_xshape_gradient("unsqueeze2"),
    inplace={"Out": "X"},
    doc="Out = X with size-1 dims inserted at `axes`, one after another (a view)",
)


# --- flatten_contiguous_range --------------------------------------------------------------------
def flatten_shape(shape, start_axis, stop_axis):
    """Dims start_axis..stop_axis (inclusive, negative allowed) merged into one; 0-D becomes [1]."""
    if not shape:
        return (1,)
    start = axis_index(start_axis, len(shape), "start_axis", shape)
    stop = axis_index(stop_axis, len(shape), "stop_axis", shape)
    if start > stop:
        raise BadShape("stop_axis", f"an axis >= start_axis={start_axis} (dim {start}) for X of shape "
                                f"{fmt_shape(shape)}", stop_axis)
    return tuple(shape[:start]) + (prod(shape[start:stop + 1]),) + tuple(shape[stop + 1:])


register(
    "flatten_contiguous_range",
    inputs=["X"],
    outputs=["Out", "XShape"],
    views={"Out": "X"},
    attrs={"start_axis": 1, "stop_axis": -1},
    infer=_view_infer(flatten_shape, "start_axis", "stop_axis"),
    kernel=_view_kernel(flatten_shape, "start_axis", "stop_axis"),
    grad=_xshape_gradient("flatten_contiguous_range"),
    inplace={"Out": "X"},
    doc="Out = X with dims start_axis..stop_axis merged into one (a view when possible)",
)
