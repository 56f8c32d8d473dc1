"""Tensor manipulation: ``stack``/``unstack``, ``expand_v2``, ``tile``, ``flip``, ``roll``,
``tril_triu``, ``cumsum``, ``diag_v2``, ``diagonal``, ``kron``, ``cross``, and the constant makers
``linspace`` and ``eye``.

Gradients: ``stack`` cuts ``Y@GRAD`` into views (X shape only); ``unstack``'s is a ``stack`` of the
pieces' gradients (autodiff zero-fills unused ones); ``expand_v2`` and ``tile`` sum ``Out@GRAD``
over the copies; ``flip``/``roll`` undo themselves on ``Out@GRAD``; ``tril_triu`` masks it;
``cumsum``'s is the cumulative sum in the other direction; ``diag_v2``/``diagonal`` move it
between the diagonal and a vector; ``kron`` and ``cross`` are products (both operands).
``linspace`` and ``eye`` have none.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import convert_dtype
from ..core.errors import fmt_shape
from .elementwise import unbroadcast
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .registry import REQUIRED, many, register
from .shape import BadShape, axis_index, raise_bad_shape

DX, DY, DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")


def _axis(ctx, shape, value, name="axis", slot="X"):
    try:
        return axis_index(value, max(len(shape), 1), name, shape)
    except BadShape as bad:
        raise_bad_shape(ctx, bad, slot)


def _same(ctx, slot="X"):
    ctx.set("Out", ctx.shape(slot), ctx.dtype(slot))


# --- stack / unstack -------------------------------------------------------------------------------
def _stack_infer(ctx):
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    first = shapes[0]
    for i, (s, d) in enumerate(zip(shapes, dtypes)):
        if d != dtypes[0] or len(s) != len(first) or any(a != b and -1 not in (a, b) for a, b in zip(s, first)):
            ctx.fail("X", f"every input of shape {fmt_shape(first)} and dtype {dtypes[0]}",
                     f"{fmt_shape(s)} {d} at position {i}")
    axis = _axis(ctx, first + (1,), ctx.attr("axis"))
    ctx.set("Y", first[:axis] + (len(shapes),) + first[axis:], dtypes[0])


def _stack_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    dy = ins[DY]
    axis = attrs["axis"] % dy.ndim
    return {DX: [np.take(dy, i, axis=axis) for i in range(dy.shape[axis])]}


register("stack", inputs=[many("X")], outputs=["Y"], attrs={"axis": 0}, infer=_stack_infer,
         kernel=lambda ins, attrs, ctx: {"Y": np.stack(ins["X"], axis=attrs["axis"])},
         grad=Gradient(_stack_grad_kernel, output_grads=("Y",), like={DX: "X"}, no_need_buffer=["X"]),
         doc="Y = the inputs (one shape) stacked along a new axis `axis`")


def _unstack_infer(ctx):
    shape = ctx.shape("X")
    axis = _axis(ctx, shape, ctx.attr("axis"))
    n = shape[axis]
    if n == -1 or (ctx.attr("num") not in (None, 0, -1) and ctx.attr("num") != n):
        ctx.fail_attr("num", f"the size of axis {axis} of X {fmt_shape(shape)}", ctx.attr("num"))
    ctx.set_many("Y", [(shape[:axis] + shape[axis + 1:], ctx.dtype("X"))] * n)


register("unstack", inputs=["X"], outputs=[many("Y")], attrs={"axis": 0, "num": 0}, infer=_unstack_infer,
         kernel=lambda ins, attrs, ctx: {"Y": [np.take(ins["X"], i, axis=attrs["axis"])
                                               for i in range(ins["X"].shape[attrs["axis"]])]},
         grad=lambda g: [g.grad_op("stack", {"X": g.output_grad("Y")}, {"Y": g.input_grad("X")},
                                   {"axis": g.attr("axis")})],
         doc="Y = the slices of X along `axis` (the axis removed); its gradient is a `stack`")


# --- expand_v2 / tile ------------------------------------------------------------------------------
def expand_shape(x_shape, shape):
    """The target of ``expand``: -1 keeps X's dim; X's dims align to the right."""
    shape = [int(s) for s in shape]
    if len(shape) < len(x_shape):
        raise BadShape("shape", f"at least {len(x_shape)} dims (the rank of X {fmt_shape(x_shape)})", shape)
    lead = len(shape) - len(x_shape)
    out = []
    for i, s in enumerate(shape):
        d = x_shape[i - lead] if i >= lead else None
        if s == -1:
            if d is None:
                raise BadShape("shape", "-1 only where X has a dim", shape)
            out.append(d)
        elif d not in (None, 1, s, -1):
            raise BadShape("shape", f"dims matching X {fmt_shape(x_shape)} where it is not 1", shape)
        else:
            out.append(s)
    return tuple(out)


def _expand_infer(ctx):
    try:
        out = expand_shape(ctx.shape("X"), ctx.attr("shape"))
    except BadShape as bad:
        raise_bad_shape(ctx, bad)
    ctx.set("Out", out, ctx.dtype("X"))


def _expand_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    aligned = (1,) * (dout.ndim - x.ndim) + tuple(x.shape)
    return {DX: np.array(unbroadcast(dout, aligned, x.shape), dtype=x.dtype)}


register("expand_v2", inputs=["X"], outputs=["Out"], attrs={"shape": REQUIRED}, infer=_expand_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.array(np.broadcast_to(
             ins["X"], expand_shape(ins["X"].shape, attrs["shape"])))},
         grad=Gradient(_expand_grad_kernel, no_need_buffer=["X"]),
         doc="Out = X broadcast to `shape` (-1 keeps X's dim); its gradient sums over the copies")


def _tile_shapes(x_shape, repeat):
    repeat = [int(r) for r in repeat]
    rank = max(len(x_shape), len(repeat))
    xs = (1,) * (rank - len(x_shape)) + tuple(x_shape)
    rs = (1,) * (rank - len(repeat)) + tuple(repeat)
    return xs, rs


def _tile_infer(ctx):
    xs, rs = _tile_shapes(ctx.shape("X"), ctx.attr("repeat_times"))
    if any(r < 1 for r in rs):
        ctx.fail_attr("repeat_times", "positive counts", list(ctx.attr("repeat_times")))
    ctx.set("Out", [-1 if d == -1 else d * r for d, r in zip(xs, rs)], ctx.dtype("X"))


def _tile_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    xs, rs = _tile_shapes(x.shape, attrs["repeat_times"])
    split = [v for pair in zip(rs, xs) for v in pair]
    summed = dout.reshape(split).sum(axis=tuple(range(0, 2 * len(xs), 2)))
    return {DX: summed.reshape(x.shape).astype(x.dtype, copy=False)}


register("tile", inputs=["X"], outputs=["Out"], attrs={"repeat_times": REQUIRED}, infer=_tile_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.tile(ins["X"], attrs["repeat_times"])},
         grad=Gradient(_tile_grad_kernel, no_need_buffer=["X"]),
         doc="Out = X repeated repeat_times[i] times along each axis (X's rank aligned to the right)")


# --- flip / roll / tril_triu -----------------------------------------------------------------------
def _flip_infer(ctx):
    shape = ctx.shape("X")
    axes = [_axis(ctx, shape, a) for a in ctx.attr("axis")]
    if len(set(axes)) != len(axes):
        ctx.fail_attr("axis", "distinct axes", list(ctx.attr("axis")))
    _same(ctx)


def _flip(x, axes):
    return np.flip(x, tuple(axes)).copy() if x.ndim else x.copy()


register("flip", inputs=["X"], outputs=["Out"], attrs={"axis": REQUIRED}, infer=_flip_infer,
         kernel=lambda ins, attrs, ctx: {"Out": _flip(ins["X"], attrs["axis"])},
         grad=Gradient(lambda ins, attrs, ctx: {DX: _flip(ins[DOUT], attrs["axis"])} if DX in ctx.wanted else {},
                       inputs=(), like={DX: DOUT}),
         doc="Out = X reversed along each of `axis`")


def _roll(x, shifts, axes):
    if not axes:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.roll(x, tuple(shifts), tuple(axes))


def _roll_infer(ctx):
    shape, shifts, axes = ctx.shape("X"), ctx.attr("shifts"), ctx.attr("axis")
    if (axes and len(shifts) != len(axes)) or (not axes and len(shifts) != 1):
        ctx.fail_attr("shifts", f"one shift per axis ({len(axes) or 1})", list(shifts))
    for a in axes:
        _axis(ctx, shape, a)
    _same(ctx)


register("roll", inputs=["X"], outputs=["Out"], attrs={"shifts": REQUIRED, "axis": []}, infer=_roll_infer,
         kernel=lambda ins, attrs, ctx: {"Out": _roll(ins["X"], attrs["shifts"], attrs["axis"])},
         grad=Gradient(lambda ins, attrs, ctx: {DX: _roll(ins[DOUT], [-s for s in attrs["shifts"]], attrs["axis"])}
                       if DX in ctx.wanted else {}, inputs=(), like={DX: DOUT}),
         doc="Out = X shifted cyclically by `shifts` along `axis` (of the flattened X when `axis` is empty)")


def _tri(x, diagonal, lower):
    return np.tril(x, diagonal) if lower else np.triu(x, diagonal)


def _tril_triu_infer(ctx):
    if len(ctx.shape("X")) < 2:
        ctx.fail("X", "rank >= 2", fmt_shape(ctx.shape("X")))
    _same(ctx)


register("tril_triu", inputs=["X"], outputs=["Out"], attrs={"diagonal": 0, "lower": True},
         infer=_tril_triu_infer,
         kernel=lambda ins, attrs, ctx: {"Out": _tri(ins["X"], attrs["diagonal"], attrs["lower"])},
         grad=Gradient(lambda ins, attrs, ctx: {DX: _tri(ins[DOUT], attrs["diagonal"], attrs["lower"])}
                       if DX in ctx.wanted else {}, inputs=(), like={DX: DOUT}),
         doc="Out = the lower (tril) or upper (triu) triangle of the last two dims of X, from `diagonal`")


# --- cumsum ----------------------------------------------------------------------------------------
def _cumsum(x, attrs, reverse):
    axis = attrs["axis"]
    if attrs["flatten"]:
        x, axis = x.reshape(-1), 0
    if x.ndim == 0:
        return x.copy()
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"]:
        out = np.concatenate([np.zeros_like(np.take(out, [0], axis=axis)),
                              np.take(out, np.arange(out.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(out, axis).copy() if reverse else out


def _cumsum_infer(ctx):
    shape = ctx.shape("X")
    if ctx.attr("flatten"):
        ctx.set("Out", (-1 if -1 in shape else int(np.prod(shape, dtype=np.int64)),), ctx.dtype("X"))
        return
    _axis(ctx, shape, ctx.attr("axis"))
    _same(ctx)


def _cumsum_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    return {DX: _cumsum(dout, attrs, not attrs["reverse"]).reshape(x.shape)}


register("cumsum", inputs=["X"], outputs=["Out"],
         attrs={"axis": -1, "flatten": False, "exclusive": False, "reverse": False},
         infer=_cumsum_infer, kernel=lambda ins, attrs, ctx: {"Out": _cumsum(ins["X"], attrs, attrs["reverse"])},
         grad=Gradient(_cumsum_grad_kernel, no_need_buffer=["X"]),
         doc="Out = the running sum of X along `axis` (of the flattened X when `flatten`; `exclusive` "
             "leaves out the element itself, `reverse` runs from the end)")


# --- diag_v2 / diagonal ----------------------------------------------------------------------------
def _diag_infer(ctx):
    shape, k = ctx.shape("X"), int(ctx.attr("offset"))
    if len(shape) == 1:
        n = -1 if shape[0] == -1 else shape[0] + abs(k)
        ctx.set("Out", (n, n), ctx.dtype("X"))
    elif len(shape) == 2:
        ctx.set("Out", (_diag_len(shape, k),), ctx.dtype("X"))
    else:
        ctx.fail("X", "a 1-D or 2-D tensor", fmt_shape(shape))


def _diag_len(shape, k):
    rows, cols = shape
    if -1 in (rows, cols):
        return -1
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _diag_kernel(ins, attrs, ctx):
    x, k = ins["X"], attrs["offset"]
    if x.ndim == 1:
        out = np.diag(x, k)
        pad = np.ones_like(out, dtype=bool)
        pad[np.diag(np.ones_like(x, dtype=bool), k)] = False
        out[pad] = attrs["padding_value"]
        return {"Out": out}
    return {"Out": np.diag(x, k).copy()}


def _diag_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout, k = ins["X"], ins[DOUT], attrs["offset"]
    if x.ndim == 1:
        return {DX: np.diag(dout, k).copy()}
    dx = np.zeros(x.shape, dtype=x.dtype)
    rows = np.arange(dout.shape[0]) + max(-k, 0)
    dx[rows, rows + k] = dout
    return {DX: dx}


register("diag_v2", inputs=["X"], outputs=["Out"], attrs={"offset": 0, "padding_value": 0.0},
         infer=_diag_infer, kernel=_diag_kernel, grad=Gradient(_diag_grad_kernel, no_need_buffer=["X"]),
         doc="Out = the matrix with X (1-D) on diagonal `offset` (padding_value elsewhere), or the "
             "diagonal `offset` of X (2-D)")


def _diagonal_infer(ctx):
    shape = ctx.shape("Input")
    a1, a2 = (_axis(ctx, shape, ctx.attr(n), n, "Input") for n in ("axis1", "axis2"))
    if a1 == a2:
        ctx.fail_attr("axis2", f"an axis other than axis1={ctx.attr('axis1')}", ctx.attr("axis2"))
    rest = [d for i, d in enumerate(shape) if i not in (a1, a2)]
    ctx.set("Out", rest + [_diag_len((shape[a1], shape[a2]), int(ctx.attr("offset")))], ctx.dtype("Input"))


def _diagonal_grad_kernel(ins, attrs, ctx):
    dx_slot = grad_slot("Input")
    if dx_slot not in ctx.wanted:
        return {}
    x, dout = ins["Input"], ins[DOUT]
    dx = np.zeros(x.shape, dtype=x.dtype)
    view = np.diagonal(dx, attrs["offset"], attrs["axis1"], attrs["axis2"])
    view.flags.writeable = True  # NumPy >= 1.9 returns a read-only view of the diagonal
    view[...] = dout
    return {dx_slot: dx}


register("diagonal", inputs=["Input"], outputs=["Out"], attrs={"offset": 0, "axis1": 0, "axis2": 1},
         infer=_diagonal_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.diagonal(ins["Input"], attrs["offset"], attrs["axis1"],
                                                            attrs["axis2"]).copy()},
         grad=Gradient(_diagonal_grad_kernel, inputs=("Input",), input_grads=("Input",), no_need_buffer=["Input"]),
         doc="Out = the diagonal `offset` of the (axis1, axis2) planes of Input, as the last dim")


# --- kron / cross ----------------------------------------------------------------------------------
def _kron_infer(ctx):
    dtype = ctx.check_same_dtype("X", "Y")
    xs, ys = ctx.shape("X"), ctx.shape("Y")
    rank = max(len(xs), len(ys))
    xs, ys = (1,) * (rank - len(xs)) + xs, (1,) * (rank - len(ys)) + ys
    ctx.set("Out", [-1 if -1 in (a, b) else a * b for a, b in zip(xs, ys)], dtype)


def _kron_grad_kernel(ins, attrs, ctx):
    x, y, dout = ins["X"], ins["Y"], ins[DOUT]
    rank = max(x.ndim, y.ndim)
    xa, ya = x.reshape((1,) * (rank - x.ndim) + x.shape), y.reshape((1,) * (rank - y.ndim) + y.shape)
    split = dout.reshape([v for pair in zip(xa.shape, ya.shape) for v in pair])
    letters = "abcdefghijklmnopqrstuvwxyz"
    xi, yi = letters[:rank], letters[rank:2 * rank]
    di = "".join(a + b for a, b in zip(xi, yi))
    result = {}
    if DX in ctx.wanted:
        result[DX] = np.einsum(f"{di},{yi}->{xi}", split, ya).reshape(x.shape)
    if DY in ctx.wanted:
        result[DY] = np.einsum(f"{di},{xi}->{yi}", split, xa).reshape(y.shape)
    return result


register("kron", inputs=["X", "Y"], outputs=["Out"], infer=_kron_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.kron(ins["X"], ins["Y"])},
         grad=Gradient(_kron_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y"), attrs=False),
         doc="Out = the Kronecker product of X and Y (ranks aligned to the right)")


def _cross_infer(ctx):
    dtype = ctx.check_same_dtype("X", "Y")
    xs, ys = ctx.shape("X"), ctx.shape("Y")
    if len(xs) != len(ys) or any(a != b and -1 not in (a, b) for a, b in zip(xs, ys)):
        ctx.fail("Y", f"shape {fmt_shape(xs)} (X's)", fmt_shape(ys))
    axis = _axis(ctx, xs, ctx.attr("dim"), "dim")
    if xs[axis] not in (3, -1):
        ctx.fail("X", f"size 3 along dim {axis}", fmt_shape(xs))
    ctx.set("Out", xs, dtype)


def _cross_grad_kernel(ins, attrs, ctx):
    x, y, dout, axis = ins["X"], ins["Y"], ins[DOUT], attrs["dim"]
    result = {}
    if DX in ctx.wanted:
        result[DX] = np.cross(y, dout, axis=axis)
    if DY in ctx.wanted:
        result[DY] = np.cross(dout, x, axis=axis)
    return result


register("cross", inputs=["X", "Y"], outputs=["Out"], attrs={"dim": REQUIRED}, infer=_cross_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.cross(ins["X"], ins["Y"], axis=attrs["dim"])},
         grad=Gradient(_cross_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y")),
         doc="Out = the cross product of X and Y along `dim` (of size 3)")


# --- linspace / eye --------------------------------------------------------------------------------
def _linspace_infer(ctx):
    if int(ctx.attr("num")) < 1:
        ctx.fail_attr("num", "a positive count", ctx.attr("num"))
    ctx.set("Out", (int(ctx.attr("num")),), ctx.attr("dtype"))


register("linspace", inputs=[], outputs=["Out"], attrs={"start": REQUIRED, "stop": REQUIRED, "num": REQUIRED,
                                                        "dtype": "float32"},
         infer=_linspace_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.linspace(attrs["start"], attrs["stop"], int(attrs["num"]))
                                         .astype(convert_dtype(attrs["dtype"]).numpy)},
         grad=NO_GRADIENT, doc="Out = `num` evenly spaced values from start to stop (both included)")


def _eye_infer(ctx):
    rows, cols = int(ctx.attr("num_rows")), int(ctx.attr("num_columns"))
    if rows < 0:
        ctx.fail_attr("num_rows", "a non-negative count", rows)
    ctx.set("Out", (rows, rows if cols < 0 else cols), ctx.attr("dtype"))


register("eye", inputs=[], outputs=["Out"], attrs={"num_rows": REQUIRED, "num_columns": -1, "dtype": "float32"},
         infer=_eye_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.eye(attrs["num_rows"], None if attrs["num_columns"] < 0
                                                       else attrs["num_columns"],
                                                       dtype=convert_dtype(attrs["dtype"]).numpy)},
         grad=NO_GRADIENT, doc="Out = the identity matrix (ones on the main diagonal) of num_rows x num_columns")

