"""``paddle.*`` manipulation functions (both modes): stack/unstack, expand/tile/broadcast, flip/
roll, chunk, tril/triu, cumsum, diag/diagonal/trace, kron/cross, meshgrid, axis moves, one_hot,
and ``reshape``/``slice`` whose shape, starts or ends may be tensors.

Argument names, orders and defaults follow the reference (``python/paddle/tensor/manipulation.py``).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core import context
from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op, apply_op_single
from . import tensor as T


def _ints(values, what):
    """A list of ints from an int, a list (entries may be 1-element eager Tensors) or an eager int
    Tensor; a static Variable here is not supported (its value is known only at run time)."""
    if isinstance(values, numbers.Integral):
        return [int(values)]
    if isinstance(values, Variable) or (not isinstance(values, Tensor) and any(isinstance(v, Variable)
                                                                                for v in values)):
        raise NotImplementedError(f"{what}: a static Variable is not supported here yet; give ints")
    if isinstance(values, Tensor):
        return [int(v) for v in values.numpy().reshape(-1)]
    return [int(v.item()) if isinstance(v, Tensor) else int(v) for v in values]


def stack(x, axis=0, name=None):
    """The tensors (one shape) stacked along a new ``axis``."""
    return apply_op_single("stack", {"X": list(x)}, {"axis": int(axis)}, out_slot="Y", name_key=T._key("stack", name))


def unstack(x, axis=0, num=None):
    """The slices of x along ``axis`` (the axis removed), a list."""
    axis = int(axis)
    n = x.shape[axis]
    attrs = {"axis": axis, "num": n}
    if not context.in_static_mode():
        return apply_op("unstack", {"X": x}, attrs)["Y"]
    block = context.default_main_program().current_block()
    from ..core import names
    key = T._key("unstack")
    outs = [block.create_var(name=names.generate_with_ignorable_key(key)) for _ in range(n)]
    return apply_op("unstack", {"X": x}, attrs, outputs={"Y": outs})["Y"]


def unbind(input, axis=0):  # noqa: A002
    """``unstack(input, axis)``."""
    return unstack(input, axis)


def expand(x, shape, name=None):
    """x broadcast to ``shape`` (-1 keeps x's dim)."""
    return apply_op_single("expand_v2", {"X": x}, {"shape": _ints(shape, "expand shape")},
                           name_key=T._key("expand_v2", name))


def broadcast_to(x, shape, name=None):
    """``expand(x, shape)``."""
    return expand(x, shape, name)


def expand_as(x, y, name=None):
    """x broadcast to y's shape."""
    return expand(x, list(y.shape), name)


def broadcast_shape(x_shape, y_shape):
    """The broadcast of two shapes (NumPy's rule), a list."""
    return list(np.broadcast_shapes(tuple(x_shape), tuple(y_shape)))


def broadcast_shapes(*shapes):
    return list(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def broadcast_tensors(input, name=None):  # noqa: A002
    """Every tensor expanded to their common broadcast shape."""
    shape = broadcast_shapes(*[t.shape for t in input])
    return [t if list(t.shape) == shape else expand(t, shape) for t in input]


def tile(x, repeat_times, name=None):
    """x repeated ``repeat_times[i]`` times along each axis."""
    return apply_op_single("tile", {"X": x}, {"repeat_times": _ints(repeat_times, "repeat_times")},
                           name_key=T._key("tile", name))


def flip(x, axis, name=None):
    """x reversed along each of ``axis`` (an int or a list)."""
    return apply_op_single("flip", {"X": x}, {"axis": _ints(axis, "flip axis")}, name_key=T._key("flip", name))


def reverse(x, axis, name=None):
    return flip(x, axis, name)


def rot90(x, k=1, axes=(0, 1), name=None):
    """x rotated by 90 degrees ``k`` times in the plane ``axes`` (flip + transpose)."""
    a, b = (int(v) % len(x.shape) for v in axes)
    k %= 4
    perm = list(range(len(x.shape)))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return T.transpose(flip(x, [b]), perm)
    if k == 2:
        return flip(x, [a, b])
    if k == 3:
        return flip(T.transpose(x, perm), [b])
    return x


def roll(x, shifts, axis=None, name=None):
    """x shifted cyclically (of the flattened x when ``axis`` is None)."""
    attrs = {"shifts": _ints(shifts, "roll shifts"), "axis": [] if axis is None else _ints(axis, "roll axis")}
    return apply_op_single("roll", {"X": x}, attrs, name_key=T._key("roll", name))


def chunk(x, chunks, axis=0, name=None):
    """x split into ``chunks`` equal pieces along ``axis``."""
    return T.split(x, int(chunks), axis=axis, name=name)


def tril(x, diagonal=0, name=None):
    """The lower triangle of the last two dims (from ``diagonal``), zeros above."""
    return apply_op_single("tril_triu", {"X": x}, {"diagonal": int(diagonal), "lower": True},
                           name_key=T._key("tril", name))


def triu(x, diagonal=0, name=None):
    """The upper triangle of the last two dims (from ``diagonal``), zeros below."""
    return apply_op_single("tril_triu", {"X": x}, {"diagonal": int(diagonal), "lower": False},
                           name_key=T._key("triu", name))


def cumsum(x, axis=None, dtype=None, name=None):
    """The running sum along ``axis`` (of the flattened x when None); ``dtype`` casts first."""
    if dtype is not None:
        x = T.cast(x, dtype)
    attrs = {"axis": -1 if axis is None else int(axis), "flatten": axis is None}
    return apply_op_single("cumsum", {"X": x}, attrs, name_key=T._key("cumsum", name))


def diag(x, offset=0, padding_value=0, name=None):
    """A matrix with x (1-D) on diagonal ``offset``, or the diagonal of x (2-D)."""
    return apply_op_single("diag_v2", {"X": x}, {"offset": int(offset), "padding_value": float(padding_value)},
                           name_key=T._key("diag_v2", name))


def diagflat(x, offset=0, name=None):
    """``diag(flatten(x), offset)``."""
    return diag(T.reshape(x, [-1]), offset)


def diagonal(x, offset=0, axis1=0, axis2=1, name=None):
    """The diagonal ``offset`` of the (axis1, axis2) planes of x, as the last dim."""
    return apply_op_single("diagonal", {"Input": x}, {"offset": int(offset), "axis1": int(axis1),
                                                      "axis2": int(axis2)}, name_key=T._key("diagonal", name))


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    """The sum of ``diagonal(x, offset, axis1, axis2)``."""
    return T.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def kron(x, y, name=None):
    """The Kronecker product."""
    return apply_op_single("kron", {"X": x, "Y": y}, name_key=T._key("kron", name))


def cross(x, y, axis=9, name=None):
    """The cross product along ``axis`` (default: the first axis of size 3)."""
    if axis == 9 or axis is None:
        axis = next((i for i, d in enumerate(x.shape) if d == 3), None)
        if axis is None:
            raise ValueError(f"cross(): x of shape {list(x.shape)} has no axis of size 3")
    return apply_op_single("cross", {"X": x, "Y": y}, {"dim": int(axis)}, name_key=T._key("cross", name))


def meshgrid(*args, **kwargs):
    """Coordinate grids of 1-D tensors ('ij' indexing): the k-th output varies along axis k."""
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    sizes = [t.shape[0] for t in tensors]
    outs = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        outs.append(expand(T.reshape(t, shape), sizes))
    return outs


def numel(x, name=None):
    """The number of elements of x, an int64 0-D tensor."""
    if -1 in list(x.shape):
        return T.cast(T.sum(T.cast(T.ones_like(x), "int64")), "int64")
    return T.full([], int(np.prod(x.shape, dtype=np.int64)), "int64")


def t(input, name=None):  # noqa: A002
    """The transpose of a tensor of rank <= 2 (rank 0 and 1 unchanged)."""
    if len(input.shape) > 2:
        raise ValueError(f"t(): input must have rank <= 2, got shape {list(input.shape)} (use transpose)")
    return input if len(input.shape) < 2 else T.transpose(input, [1, 0])


def matrix_transpose(x, name=None):
    """x with its last two dims swapped."""
    return swapaxes(x, -1, -2)


def moveaxis(x, source, destination, name=None):
    """x with the axes ``source`` moved to ``destination`` (the others keep their order)."""
    rank = len(x.shape)
    src = [s % rank for s in _ints(source, "moveaxis source")]
    dst = [d % rank for d in _ints(destination, "moveaxis destination")]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis(): {len(src)} source axes but {len(dst)} destinations")
    rest = [a for a in range(rank) if a not in src]
    perm = [None] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    return T.transpose(x, [p if p is not None else next(it) for p in perm])


def swapaxes(x, axis0, axis1, name=None):
    """x with two axes exchanged."""
    perm = list(range(len(x.shape)))
    a, b = int(axis0) % len(perm), int(axis1) % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return T.transpose(x, perm)


def permute(x, *perm):
    dims = list(perm[0]) if len(perm) == 1 and isinstance(perm[0], (list, tuple)) else list(perm)
    return T.transpose(x, dims)


def unflatten(x, axis, shape, name=None):
    """Axis ``axis`` of x split into ``shape`` (one -1 allowed)."""
    axis = int(axis) % len(x.shape)
    full = [0] * axis + _ints(shape, "unflatten shape") + [0] * (len(x.shape) - axis - 1)
    return reshape(x, full)


def atleast_1d(*inputs, name=None):
    outs = [T.reshape(x, [1]) if len(x.shape) == 0 else x for x in inputs]
    return outs[0] if len(outs) == 1 else outs


def atleast_2d(*inputs, name=None):
    outs = [T.reshape(x, [1] * (2 - len(x.shape)) + list(x.shape)) if len(x.shape) < 2 else x for x in inputs]
    return outs[0] if len(outs) == 1 else outs


def atleast_3d(*inputs, name=None):
    def lift(x):
        rank = len(x.shape)
        if rank >= 3:
            return x
        shape = {0: [1, 1, 1], 1: [1, x.shape[0], 1], 2: list(x.shape) + [1]}[rank]
        return T.reshape(x, shape)
    outs = [lift(x) for x in inputs]
    return outs[0] if len(outs) == 1 else outs


def hstack(x, name=None):
    xs = atleast_1d(*x)
    xs = xs if isinstance(xs, list) else [xs]
    return T.concat(xs, axis=0 if len(xs[0].shape) == 1 else 1)


def vstack(x, name=None):
    xs = atleast_2d(*x)
    return T.concat(xs if isinstance(xs, list) else [xs], axis=0)


def one_hot(x, num_classes, name=None):
    """One-hot float32 rows of length ``num_classes`` (shape x.shape + [num_classes]); also
    ``paddle.nn.functional.one_hot``."""
    return apply_op_single("one_hot_v2", {"X": x}, {"depth": int(num_classes), "dtype": "float32"},
                           name_key=T._key("one_hot_v2", name))


# --- reshape / slice with tensor shapes --------------------------------------------------------
def _is_tensor(v):
    return isinstance(v, (Tensor, Variable))


def _shape_vector(values):
    """A 1-D int64 Variable of ``values`` (ints and 1-element Variables), and the known entries."""
    pieces, hint = [], []
    for v in values:
        if _is_tensor(v):
            pieces.append(T.reshape(T.cast(v, "int64"), [1]))
            hint.append(-1)
        else:
            pieces.append(T.full([1], int(v), "int64"))
            hint.append(int(v))
    return T.concat(pieces, axis=0), hint


def reshape(x, shape, name=None):
    """``paddle.reshape``: ``shape`` is a list (entries may be 1-element tensors) or an int tensor;
    0 copies x's dim, one -1 is inferred.  In static mode tensor entries make a ``reshape_tensor``
    op whose shape is read when the program runs."""
    if _is_tensor(shape) or any(_is_tensor(s) for s in shape):
        if not context.in_static_mode():
            values = shape.numpy().tolist() if _is_tensor(shape) else [int(s.item()) if _is_tensor(s) else int(s)
                                                                        for s in shape]
            return T.reshape(x, values, name)
        if _is_tensor(shape):
            vec, hint = T.cast(shape, "int64"), [-1] * int(shape.shape[0])
        else:
            vec, hint = _shape_vector(shape)
        hint = [x.shape[i] if h == 0 and i < len(x.shape) else h for i, h in enumerate(hint)]
        return apply_op_single("reshape_tensor", {"X": x, "ShapeTensor": vec}, {"hint": hint},
                               name_key=T._key("reshape2", name))
    return T.reshape(x, shape, name)


def slice(input, axes, starts, ends):  # noqa: A001,A002
    """``paddle.slice``: starts/ends are lists of ints (entries may be tensors) or int tensors."""
    dynamic = any(_is_tensor(v) for v in (starts, ends)) or any(
        _is_tensor(v) for seq in (starts, ends) if not _is_tensor(seq) for v in seq)
    if not dynamic:
        return T.slice(input, axes, starts, ends)
    if not context.in_static_mode():
        def values(seq):
            return seq.numpy().tolist() if _is_tensor(seq) else [int(v.item()) if _is_tensor(v) else int(v)
                                                                  for v in seq]
        return T.slice(input, axes, values(starts), values(ends))
    vecs = [T.cast(seq, "int64") if _is_tensor(seq) else _shape_vector(seq)[0] for seq in (starts, ends)]
    return apply_op_single("slice_tensor", {"Input": input, "StartsTensor": vecs[0], "EndsTensor": vecs[1]},
                           {"axes": [int(a) for a in axes]}, name_key=T._key("slice"))


__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shape", "broadcast_shapes", "broadcast_tensors",
           "broadcast_to", "chunk", "cross", "cumsum", "diag", "diagflat", "diagonal", "expand", "expand_as", "flip",
           "hstack", "kron", "matrix_transpose", "meshgrid", "moveaxis", "numel", "one_hot", "permute", "reshape",
           "reverse", "roll", "rot90", "slice", "stack", "swapaxes", "t", "tile", "trace", "tril", "triu", "unbind",
           "unflatten", "unstack", "vstack"]
