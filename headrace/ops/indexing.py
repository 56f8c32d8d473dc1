"""Indexing ops: ``gather``, ``gather_nd``, ``scatter``, ``scatter_nd_add``, ``take_along_axis``,
``one_hot_v2``, and ``getitem``/``setitem`` (``x[index]`` and ``x[index] = value`` with NumPy's
indexing rules, ``ops/index_items.py``).

Index tensors are int32/int64; an index out of range is an ``IndexError`` naming the op.  Negative
indices count from the end (as NumPy's).

Gradients: gather-like ops scatter ``Out@GRAD`` back with accumulation (``np.add.at``: an element
read twice gets both contributions).  ``scatter`` (overwrite) and ``setitem`` overwrite: ``X@GRAD``
is ``Out@GRAD`` with the overwritten positions zeroed, and ``Updates@GRAD``/``Value@GRAD`` is
``Out@GRAD`` at the positions each update landed, zero for an update a later duplicate index
overwrote (the reference hands every duplicate the gradient).  ``one_hot_v2`` has none.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import bool_, convert_dtype, int32, int64
from ..core.errors import DTypeError, ShapeError, fmt_shape
from .elementwise import unbroadcast
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .index_items import IndexSpecError, index_shape, numpy_index
from .registry import REQUIRED, many, optional, register
from .shape import BadShape, axis_index, raise_bad_shape

DX, DOUT = grad_slot("X"), grad_slot("Out")
INDEX_DTYPES = (int32, int64)


def _check_index(ctx, slot):
    ctx.check_dtype(slot, INDEX_DTYPES)
    return ctx.shape(slot)


def _axis_prefix(axis, index):
    return (slice(None),) * axis + (index,)


def _accumulated(shape, dtype, index, dout):
    dx = np.zeros(shape, dtype=dtype)
    np.add.at(dx, index, dout)
    return dx


# --- gather ----------------------------------------------------------------------------------------
def _gather_infer(ctx):
    x, index = ctx.shape("X"), _check_index(ctx, "Index")
    if len(index) > 1:
        ctx.fail("Index", "a 1-D or 0-D index", f"shape {fmt_shape(index)}")
    try:
        axis = axis_index(ctx.attr("axis"), len(x), "axis", x)
    except BadShape as bad:
        raise_bad_shape(ctx, bad)
    ctx.set("Out", x[:axis] + tuple(index) + x[axis + 1:], ctx.dtype("X"))


def _gather_kernel(ins, attrs, ctx):
    x, index = ins["X"], ins["Index"]
    return {"Out": np.take(x, index, axis=attrs["axis"] % x.ndim)}


def _gather_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, index, dout = ins["X"], ins["Index"], ins[DOUT]
    axis = attrs["axis"] % x.ndim
    return {DX: _accumulated(x.shape, x.dtype, _axis_prefix(axis, index.astype(np.int64)), dout)}


register("gather", inputs=["X", "Index"], outputs=["Out"], attrs={"axis": 0}, infer=_gather_infer,
         kernel=_gather_kernel,
         grad=Gradient(_gather_grad_kernel, inputs=("X", "Index"), no_need_buffer=["X"]),
         doc="Out = the slices of X at Index along `axis` (a 0-D Index drops the axis)")


# --- gather_nd / scatter_nd_add --------------------------------------------------------------------
def _nd_depth(ctx):
    x, index = ctx.shape("X"), _check_index(ctx, "Index")
    if not index:
        ctx.fail("Index", "rank >= 1 (the last dim indexes X)", "a 0-D index")
    k = index[-1]
    if k == -1 or k > len(x):
        ctx.fail("Index", f"a last dim of at most {len(x)} (the rank of X {fmt_shape(x)})", fmt_shape(index))
    return x, index, k


def _gather_nd_infer(ctx):
    x, index, k = _nd_depth(ctx)
    ctx.set("Out", index[:-1] + x[k:], ctx.dtype("X"))


def _nd_tuple(index):
    return tuple(index[..., i].astype(np.int64) for i in range(index.shape[-1]))


def _gather_nd_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, index, dout = ins["X"], ins["Index"], ins[DOUT]
    return {DX: _accumulated(x.shape, x.dtype, _nd_tuple(index), dout)}


register("gather_nd", inputs=["X", "Index"], outputs=["Out"], infer=_gather_nd_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.asarray(ins["X"][_nd_tuple(ins["Index"])])},
         grad=Gradient(_gather_nd_grad_kernel, inputs=("X", "Index"), no_need_buffer=["X"], attrs=False),
         doc="Out[i...] = X[Index[i..., 0], ..., Index[i..., k-1]] (k = Index's last dim)")


def _scatter_nd_add_infer(ctx):
    x, index, k = _nd_depth(ctx)
    want = index[:-1] + x[k:]
    got = ctx.shape("Updates")
    ctx.check_same_dtype("X", "Updates")
    if len(got) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(got, want)):
        ctx.fail("Updates", f"shape {fmt_shape(want)} (Index.shape[:-1] + X.shape[k:])", fmt_shape(got))
    ctx.set("Out", x, ctx.dtype("X"))


def _scatter_nd_add_kernel(ins, attrs, ctx):
    out = ins["X"].copy()
    np.add.at(out, _nd_tuple(ins["Index"]), ins["Updates"])
    return {"Out": out}


def _scatter_nd_add_grad_kernel(ins, attrs, ctx):
    dout, result = ins[DOUT], {}
    if DX in ctx.wanted:
        result[DX] = dout.copy()
    if grad_slot("Updates") in ctx.wanted:
        result[grad_slot("Updates")] = np.asarray(dout[_nd_tuple(ins["Index"])])
    return result


register("scatter_nd_add", inputs=["X", "Index", "Updates"], outputs=["Out"], infer=_scatter_nd_add_infer,
         kernel=_scatter_nd_add_kernel,
         grad=Gradient(_scatter_nd_add_grad_kernel, inputs=("Index",), input_grads=("X", "Updates"),
                       infer=lambda ctx: (ctx.set(DX, ctx.shape(DOUT), ctx.dtype(DOUT)),
                                          ctx.set(grad_slot("Updates"),
                                                  ctx.shape("Index")[:-1] + ctx.shape(DOUT)[ctx.shape("Index")[-1]:],
                                                  ctx.dtype(DOUT))),
                       attrs=False),
         doc="Out = X with Updates added at the coordinates in Index (duplicates accumulate)")


# --- scatter ---------------------------------------------------------------------------------------
def _scatter_infer(ctx):
    x, ids, upd = ctx.shape("X"), _check_index(ctx, "Ids"), ctx.shape("Updates")
    ctx.check_same_dtype("X", "Updates")
    if len(ids) != 1:
        ctx.fail("Ids", "a 1-D index", fmt_shape(ids))
    if len(upd) != len(x) or any(a != b and -1 not in (a, b) for a, b in zip(upd[1:], x[1:])) or \
            (upd[0] != ids[0] and -1 not in (upd[0], ids[0])):
        ctx.fail("Updates", f"shape [{ids[0]}] + {fmt_shape(x[1:])} (len(Ids) rows of X's row shape)", fmt_shape(upd))
    ctx.set("Out", x, ctx.dtype("X"))


def _scatter_kernel(ins, attrs, ctx):
    x, ids, upd = ins["X"], ins["Ids"].astype(np.int64), ins["Updates"]
    n = x.shape[0]
    if ids.size and (ids.min() < -n or ids.max() >= n):
        raise IndexError(f"op `scatter`: Ids must lie in [-{n}, {n}), got {ids.tolist()}")
    out = x.copy()
    if attrs["overwrite"]:
        out[ids] = upd          # a duplicate index: the last update wins, as the reference
    else:
        out[ids] = 0
        np.add.at(out, ids, upd)
    return {"Out": out}


def last_writer_mask(shape, index, target_shape):
    """True where an element of ``x[index] = value`` (``value`` of ``target_shape``) is the one that
    stays: later duplicates overwrite earlier ones, as NumPy's assignment does."""
    count = int(np.prod(target_shape, dtype=np.int64))
    marker = np.full(shape, -1, dtype=np.int64)
    order = np.arange(count, dtype=np.int64).reshape(target_shape)
    marker[index] = order
    return marker[index] == order


def _scatter_grad_kernel(ins, attrs, ctx):
    ids, dout = ins["Ids"].astype(np.int64), ins[DOUT]
    result = {}
    if DX in ctx.wanted:
        dx = dout.copy()
        dx[ids] = 0
        result[DX] = dx
    du = grad_slot("Updates")
    if du in ctx.wanted:
        picked = dout[ids]
        if attrs["overwrite"]:
            picked = picked * last_writer_mask(dout.shape, ids, picked.shape)
        result[du] = np.asarray(picked, dtype=dout.dtype)
    return result


register("scatter", inputs=["X", "Ids", "Updates"], outputs=["Out"], attrs={"overwrite": True},
         infer=_scatter_infer, kernel=_scatter_kernel,
         grad=Gradient(_scatter_grad_kernel, inputs=("Ids", "Updates"), input_grads=("X", "Updates"),
                       like={DX: DOUT, grad_slot("Updates"): "Updates"}, no_need_buffer=["Updates"]),
         doc="Out = X with rows Ids replaced by Updates (overwrite; the last duplicate wins), or "
             "with those rows zeroed and the Updates summed in (overwrite=False)")


# --- take_along_axis -------------------------------------------------------------------------------
def _take_along_infer(ctx):
    x, index = ctx.shape("Input"), _check_index(ctx, "Index")
    if len(index) != len(x):
        ctx.fail("Index", f"rank {len(x)} (the rank of Input)", fmt_shape(index))
    try:
        axis_index(ctx.attr("Axis"), len(x), "Axis", x)
    except BadShape as bad:
        raise_bad_shape(ctx, bad, "Input")
    ctx.set("Result", index, ctx.dtype("Input"))


def along_axis_index(index, axis):
    """The full NumPy index of ``take_along_axis(x, index, axis)`` (``index`` broadcast on the other axes)."""
    grids = list(np.ix_(*[np.arange(n) for n in index.shape]))
    grids[axis] = index.astype(np.int64)
    return tuple(grids)


def _take_along_grad_kernel(ins, attrs, ctx):
    dx = grad_slot("Input")
    if dx not in ctx.wanted:
        return {}
    x, index, dout = ins["Input"], ins["Index"], ins[grad_slot("Result")]
    axis = attrs["Axis"] % x.ndim
    return {dx: _accumulated(x.shape, x.dtype, along_axis_index(index, axis), dout)}


register("take_along_axis", inputs=["Input", "Index"], outputs=["Result"], attrs={"Axis": REQUIRED},
         infer=_take_along_infer,
         kernel=lambda ins, attrs, ctx: {"Result": np.take_along_axis(ins["Input"], ins["Index"].astype(np.int64),
                                                                      attrs["Axis"])},
         grad=Gradient(_take_along_grad_kernel, inputs=("Input", "Index"), output_grads=("Result",),
                       input_grads=("Input",), no_need_buffer=["Input"]),
         doc="Result = the values of Input at Index along `Axis` (Index of Input's rank)")


# --- one_hot_v2 ------------------------------------------------------------------------------------
def _one_hot_infer(ctx):
    shape = _check_index(ctx, "X")
    depth = int(ctx.attr("depth"))
    if depth < 1:
        ctx.fail_attr("depth", "a positive number of classes", depth)
    ctx.set("Out", shape + (depth,), ctx.attr("dtype"))


def _one_hot_kernel(ins, attrs, ctx):
    x, depth = ins["X"].astype(np.int64), int(attrs["depth"])
    bad = (x < 0) | (x >= depth)
    if bad.any() and not attrs["allow_out_of_range"]:
        raise IndexError(f"op `one_hot_v2`: labels must lie in [0, {depth}), got {x[bad][:5].tolist()}")
    out = np.zeros(x.shape + (depth,), dtype=convert_dtype(attrs["dtype"]).numpy)
    coords = np.nonzero(~bad)
    out[coords + (x[~bad],)] = 1
    return {"Out": out}


register("one_hot_v2", inputs=["X"], outputs=["Out"],
         attrs={"depth": REQUIRED, "dtype": "float32", "allow_out_of_range": False},
         infer=_one_hot_infer, kernel=_one_hot_kernel, grad=NO_GRADIENT,
         doc="Out = one-hot rows of length `depth` for the labels in X (Out.shape = X.shape + [depth])")


# --- getitem / setitem -----------------------------------------------------------------------------
def _index_shape(ctx, shape):
    shapes, dtypes = ctx.shapes("Indices"), ctx.dtypes("Indices")
    for k, dtype in enumerate(dtypes):
        if dtype not in (bool_, int32, int64):
            ctx.fail("Indices", "bool or int32/int64 index tensors", f"{dtype} at position {k}", error=DTypeError)
    try:
        return index_shape(shape, ctx.attr("index"), shapes, [d == bool_ for d in dtypes])
    except (IndexSpecError, IndexError) as exc:
        ctx.fail("X", f"a tensor the index {ctx.attr('index')} fits", f"shape {fmt_shape(shape)}: {exc}")


def _getitem_infer(ctx):
    ctx.set("Out", _index_shape(ctx, ctx.shape("X")), ctx.dtype("X"))


def _index_of(ins, attrs):
    return numpy_index(attrs["index"], ins.get("Indices") or [])


def _getitem_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x = ins["X"]
    return {DX: _accumulated(x.shape, x.dtype, _index_of(ins, attrs), ins[DOUT])}


register("getitem", inputs=["X", many("Indices", optional=True)], outputs=["Out"], attrs={"index": REQUIRED},
         infer=_getitem_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.array(ins["X"][_index_of(ins, attrs)], copy=True)},
         grad=Gradient(_getitem_grad_kernel, inputs=("X", "Indices"), no_need_buffer=["X"]),
         doc="Out = X[index] with NumPy's rules (ints, slices with steps, None, ..., bool masks and "
             "integer index tensors); always a new array (int and step-1 slice indices use `slice`)")


def _setitem_infer(ctx):
    target = _index_shape(ctx, ctx.shape("X"))
    if ctx.has("Value"):
        ctx.check_same_dtype("X", "Value")
        value = ctx.shape("Value")
        fits = len(value) <= len(target) and all(
            v in (1, t, -1) or t == -1 for v, t in zip(value[::-1], target[::-1]))
        if not fits:
            ctx.fail("Value", f"a shape broadcastable to {fmt_shape(target)} (X[index])", fmt_shape(value))
    ctx.set("Out", ctx.shape("X"), ctx.dtype("X"))


def _setitem_kernel(ins, attrs, ctx):
    x = ins["X"]
    out = x.copy()
    value = ins["Value"] if "Value" in ins else x.dtype.type(attrs["value"])
    out[_index_of(ins, attrs)] = value
    return {"Out": out}


def _setitem_grad_kernel(ins, attrs, ctx):
    dout, index = ins[DOUT], _index_of(ins, attrs)
    result = {}
    if DX in ctx.wanted:
        dx = dout.copy()
        dx[index] = 0
        result[DX] = dx
    dv = grad_slot("Value")
    if dv in ctx.wanted and "Value" in ins:
        value = ins["Value"]
        picked = np.asarray(dout[index])
        picked = picked * last_writer_mask(dout.shape, index, picked.shape)
        if value.ndim > picked.ndim:
            raise ShapeError(f"op `setitem_grad`: Value of shape {fmt_shape(value.shape)} is larger than "
                             f"X[index] {fmt_shape(picked.shape)}")
        aligned = (1,) * (picked.ndim - value.ndim) + value.shape
        result[dv] = np.array(unbroadcast(picked, aligned, value.shape), dtype=value.dtype)
    return result


register("setitem", inputs=["X", optional("Value"), many("Indices", optional=True)], outputs=["Out"],
         attrs={"index": REQUIRED, "value": 0.0}, infer=_setitem_infer, kernel=_setitem_kernel,
         grad=Gradient(_setitem_grad_kernel, inputs=("Value", "Indices"), input_grads=("X", "Value"),
                       like={DX: DOUT, grad_slot("Value"): "Value"}, no_need_buffer=["Value"],
                       optional=("Value",)),
         doc="Out = a copy of X with X[index] = Value (broadcast; or the scalar `value` when Value is absent)")
