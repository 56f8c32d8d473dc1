"""Reshape and slice whose shape, starts or ends are tensors (known only when the program runs):
``reshape_tensor`` (X, ShapeTensor) and ``slice_tensor`` (Input, StartsTensor, EndsTensor).

The static facades (``paddle.reshape(x, shape_var)``, ``paddle.slice(x, axes, starts_var, ...)``)
build these; in eager mode the values are at hand and the plain ``reshape2``/``slice`` run instead.
Build-time shapes: ``reshape_tensor`` takes the output's rank from ShapeTensor's length and its
known dims from the ``hint`` attribute (-1 unknown); ``slice_tensor`` leaves the sliced dims
unknown.  The same shape rules as ``reshape2``/``slice`` apply at run time (0 copies a dim, one -1
is inferred; Python slice bounds).

Gradients: ``Out@GRAD`` reshaped back to X's shape (X shape only), or written into zeros where the
slice came from (Input shape only).  The shape tensors get none.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import int32, int64
from ..core.errors import fmt_shape
from .concat_slice import slice_bounds
from .gradrule import Gradient, grad_slot
from .registry import REQUIRED, register
from .shape import BadShape, reshape_shape

DX, DOUT = grad_slot("X"), grad_slot("Out")


def _vector(ctx, slot, length=None):
    ctx.check_dtype(slot, (int32, int64))
    shape = ctx.shape(slot)
    if len(shape) != 1 or shape[0] == -1 or (length is not None and shape[0] != length):
        want = f"[{length}]" if length is not None else "a 1-D tensor of known length"
        ctx.fail(slot, want, fmt_shape(shape))
    return shape[0]


def _reshape_infer(ctx):
    n = _vector(ctx, "ShapeTensor")
    hint = list(ctx.attr("hint")) or [-1] * n
    if len(hint) != n:
        ctx.fail_attr("hint", f"{n} dims (the length of ShapeTensor)", hint)
    ctx.set("Out", hint, ctx.dtype("X"))


def _reshape_kernel(ins, attrs, ctx):
    x, shape = ins["X"], [int(v) for v in ins["ShapeTensor"]]
    try:
        out = reshape_shape(x.shape, shape)
    except BadShape as bad:
        raise ValueError(f"op `reshape_tensor`: cannot reshape X of shape {fmt_shape(x.shape)} to {shape}: "
                         f"expected {bad.expected}") from None
    return {"Out": np.reshape(x, out)}


register("reshape_tensor", inputs=["X", "ShapeTensor"], outputs=["Out"], attrs={"hint": []},
         infer=_reshape_infer, kernel=_reshape_kernel, views={"Out": "X"},
         grad=Gradient(lambda ins, attrs, ctx: {DX: np.reshape(ins[DOUT], ins["X"].shape)} if DX in ctx.wanted
                       else {}, inputs=("X",), no_need_buffer=["X"], views={DX: DOUT}, attrs=False),
         doc="Out = X reshaped to the shape held by ShapeTensor (0 copies X's dim, one -1 is inferred)")


def _slice_infer(ctx):
    shape, axes = ctx.shape("Input"), [int(a) for a in ctx.attr("axes")]
    for slot in ("StartsTensor", "EndsTensor"):
        _vector(ctx, slot, len(axes))
    rank = len(shape)
    if any(not -rank <= a < rank for a in axes) or len({a % max(rank, 1) for a in axes}) != len(axes):
        ctx.fail_attr("axes", f"distinct axes of Input {fmt_shape(shape)}", axes)
    norm = [a % rank for a in axes]
    decrease = [int(a) % rank for a in ctx.attr("decrease_axis")]
    out = [-1 if i in norm else d for i, d in enumerate(shape)]
    ctx.set("Out", [d for i, d in enumerate(out) if i not in decrease], ctx.dtype("Input"))


def _slice_index(x, ins, attrs):
    index = [slice(None)] * x.ndim
    for a, s, e in zip(attrs["axes"], ins["StartsTensor"], ins["EndsTensor"]):
        a = int(a) % x.ndim
        index[a] = slice(*slice_bounds(x.shape[a], int(s), int(e)))
    return tuple(index)


def _slice_kernel(ins, attrs, ctx):
    x = ins["Input"]
    out = x[_slice_index(x, ins, attrs)].copy()     # a new array (the memory estimate cannot read starts)
    decrease = tuple(int(a) % x.ndim for a in attrs["decrease_axis"])
    if any(out.shape[a] != 1 for a in decrease):
        raise ValueError(f"op `slice_tensor`: decrease_axis {list(decrease)} names axes whose slice is not of "
                         f"length 1 (got shape {fmt_shape(out.shape)})")
    return {"Out": np.squeeze(out, axis=decrease) if decrease else out}


def _slice_grad_kernel(ins, attrs, ctx):
    slot = grad_slot("Input")
    if slot not in ctx.wanted:
        return {}
    x, dout = ins["Input"], ins[DOUT]
    dx = np.zeros(x.shape, dtype=x.dtype)
    index = _slice_index(x, ins, attrs)
    dx[index] = dout.reshape(dx[index].shape)
    return {slot: dx}


register("slice_tensor", inputs=["Input", "StartsTensor", "EndsTensor"], outputs=["Out"],
         attrs={"axes": REQUIRED, "decrease_axis": []}, infer=_slice_infer, kernel=_slice_kernel,
         grad=Gradient(_slice_grad_kernel, inputs=("Input", "StartsTensor", "EndsTensor"), input_grads=("Input",),
                       no_need_buffer=["Input"]),
         doc="Out = Input[starts[i]:ends[i]] along axes[i], starts/ends held by tensors (Python slice rules)")
