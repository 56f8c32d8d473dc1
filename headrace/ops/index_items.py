"""The index of ``x[...]`` as op attributes, and the shape rule of NumPy indexing on it.

Not an op family: the helpers ``getitem``/``setitem`` (``ops/indexing.py``) share.  An index is
stored JSON-like in the op's ``index`` attribute, one entry per item:

- ``["i", k]``: an int (drops the axis); ``["s", start, stop, step]``: a slice (``None`` allowed);
- ``["n"]``: ``None`` (a new axis of size 1); ``["e"]``: ``...``;
- ``["t", k]``: the k-th tensor of the op's ``Indices`` slot (bool: a mask over as many axes as
  its rank; integer: one axis, an index array).

Semantics are NumPy's (basic and advanced indexing), which the reference follows for these
items: with any tensor in the index, ints count as advanced indices too, the advanced indices
broadcast together, and their dims go where the first of them stood if they are adjacent, else
first.  A bool mask is its ``nonzero()`` coordinates.
"""
from __future__ import annotations

import numpy as np

from .infer_helpers import BroadcastError, broadcast_shape


class IndexSpecError(ValueError):
    pass


def expand_ellipsis(items, rank, tensor_ranks):
    """Items with ``["e"]`` replaced by full slices (at most one ``...``); checks the count of axes."""
    def used(item):
        kind = item[0]
        if kind in ("i", "s"):
            return 1
        if kind == "t":
            return tensor_ranks[item[1]][1]
        return 0

    if sum(1 for it in items if it[0] == "e") > 1:
        raise IndexSpecError("an index can only have a single ellipsis ('...')")
    consumed = sum(used(it) for it in items)
    if consumed > rank:
        raise IndexSpecError(f"too many indices for a tensor of rank {rank}: the index uses {consumed} axes")
    full = [["s", None, None, None]] * (rank - consumed)
    if not any(it[0] == "e" for it in items):
        return list(items) + full      # the remaining axes are taken whole
    out = []
    for it in items:
        out.extend(full if it[0] == "e" else [it])
    return out


def _slice_len(dim, start, stop, step):
    if dim == -1:
        return -1
    return len(range(*slice(start, stop, step).indices(dim)))


def index_shape(shape, items, tensor_shapes, tensor_bool):
    """The shape ``x[index]`` has, NumPy's rule; -1 for dims unknown at build time (mask counts).

    ``tensor_shapes[k]``/``tensor_bool[k]`` describe the k-th tensor item."""
    ranks = [(k, len(s) if tensor_bool[k] else 1) for k, s in enumerate(tensor_shapes)]
    items = expand_ellipsis(items, len(shape), ranks)
    has_tensor = any(it[0] == "t" for it in items)
    out, adv_shapes, adv_pos, axis, last_adv, separated = [], [], None, 0, None, False
    for pos, it in enumerate(items):
        kind = it[0]
        advanced = kind == "t" or (kind == "i" and has_tensor)
        if advanced:
            if last_adv is not None and last_adv != pos - 1:
                separated = True
            last_adv = pos
            if adv_pos is None:
                adv_pos = len(out)
        if kind == "i":
            dim, k = shape[axis], int(it[1])
            if dim != -1 and not -dim <= k < dim:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {dim}")
            if has_tensor:
                adv_shapes.append(())
            axis += 1
        elif kind == "s":
            out.append(_slice_len(shape[axis], it[1], it[2], it[3]))
            axis += 1
        elif kind == "n":
            out.append(1)
        else:
            k = it[1]
            if tensor_bool[k]:
                n = len(tensor_shapes[k])
                mask_shape, dims = tensor_shapes[k], shape[axis:axis + n]
                if any(a != b and a != -1 and b != -1 for a, b in zip(mask_shape, dims)):
                    raise IndexError(f"a bool mask of shape {list(mask_shape)} does not match the indexed "
                                     f"dims {list(dims)}")
                adv_shapes.append((-1,))
                axis += n
            else:
                adv_shapes.append(tuple(tensor_shapes[k]))
                axis += 1
    if not has_tensor:
        return tuple(out)
    try:
        adv = ()
        for s in adv_shapes:
            adv = broadcast_shape(adv, s)
    except BroadcastError:
        raise IndexError(f"shape mismatch: index arrays of shapes {[list(s) for s in adv_shapes]} "
                         "cannot be broadcast together") from None
    at = 0 if separated else adv_pos
    return tuple(out[:at]) + tuple(adv) + tuple(out[at:])


def numpy_index(items, tensors):
    """The NumPy index tuple for ``items``, bool masks as their nonzero coordinates."""
    out = []
    for it in items:
        kind = it[0]
        if kind == "i":
            out.append(int(it[1]))
        elif kind == "s":
            out.append(slice(it[1], it[2], it[3]))
        elif kind == "n":
            out.append(None)
        elif kind == "e":
            out.append(Ellipsis)
        else:
            t = tensors[it[1]]
            if t.dtype == np.bool_:
                out.extend(np.nonzero(t))
            else:
                out.append(t.astype(np.int64, copy=False))
    return tuple(out)
