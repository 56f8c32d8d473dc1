"""Small ``paddle.*`` composites and utilities (both modes unless said): quantile, tensordot,
cdist, block_diag, cartesian_prod, trapezoid, crop/narrow/strided_slice, view_as, reduce_as,
increment, log_normal, and the eager helpers ``from_numpy``/``asarray``/``as_tensor``,
``set_grad_enabled``, ``manual_seed``, ``set_printoptions``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.random import seed
from ..eager import tape
from . import tensor as T
from . import tensor_manip as TM
from . import tensor_reduce as TR
from . import tensor_search as TS


def quantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """The q-th quantile(s) along ``axis`` (all elements when None), linear interpolation between
    the sorted values; a list ``q`` stacks the results on a new first axis."""
    if interpolation != "linear":
        raise NotImplementedError(f"quantile(): interpolation={interpolation!r} is not supported yet")
    if axis is None:
        x, axis = T.reshape(x, [-1]), 0
    axis = int(axis) % len(x.shape)
    n = x.shape[axis]
    s = TS.sort(x, axis=axis)
    qs = [q] if isinstance(q, numbers.Number) else list(q)
    outs = []
    for value in qs:
        if not 0 <= value <= 1:
            raise ValueError(f"quantile(): q must lie in [0, 1], got {value}")
        pos = value * (n - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        a = T.slice(s, [axis], [lo], [lo + 1])
        b = T.slice(s, [axis], [hi], [hi + 1])
        out = T.add(a, T.scale(T.subtract(b, a), pos - lo))
        outs.append(out if keepdim else T.squeeze(out, [axis]))
    return outs[0] if isinstance(q, numbers.Number) else TM.stack(outs, axis=0)


def tensordot(x, y, axes=2, name=None):
    """Sum of products over ``axes`` (an int: the last n of x with the first n of y; or two lists)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    rx, ry = len(x.shape), len(y.shape)
    if isinstance(axes, numbers.Integral):
        ax, ay = list(range(rx - int(axes), rx)), list(range(int(axes)))
    else:
        ax, ay = ([a] if isinstance(a, numbers.Integral) else list(a) for a in axes)
    xs = list(letters[:rx])
    ys = list(letters[rx:rx + ry])
    for i, j in zip(ax, ay):
        ys[j % ry] = xs[i % rx]
    out = [c for c in xs if c not in [xs[i % rx] for i in ax]] + [c for k, c in enumerate(ys) if k not in
                                                                   [j % ry for j in ay]]
    return TR.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """Pairwise p-norm distances between the rows of x [.., N, D] and y [.., M, D]."""
    diff = T.subtract(T.unsqueeze(x, [-2]), T.unsqueeze(y, [-3]))
    return TR.norm(diff, p=float(p), axis=-1)


def block_diag(inputs, name=None):
    """The 2-D tensors (or scalars/1-D as rows) placed along a block diagonal."""
    mats = [T.reshape(t, [1, -1]) if len(t.shape) < 2 else t for t in inputs]
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        width = m.shape[1]
        parts = []
        if left:
            parts.append(T.zeros([m.shape[0], left], m.dtype))
        parts.append(m)
        if cols - left - width:
            parts.append(T.zeros([m.shape[0], cols - left - width], m.dtype))
        rows.append(T.concat(parts, axis=1) if len(parts) > 1 else m)
        left += width
    return T.concat(rows, axis=0)


def cartesian_prod(x, name=None):
    """Every combination of the elements of the 1-D tensors, one row each."""
    if len(x) == 1:
        return x[0]
    grids = TM.meshgrid(*x)
    return TM.stack([T.reshape(g, [-1]) for g in grids], axis=1)


def trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """The trapezoid rule along ``axis`` (sample points ``x`` or spacing ``dx``, default 1)."""
    axis = int(axis) % len(y.shape)
    n = y.shape[axis]
    mid = T.scale(T.add(T.slice(y, [axis], [1], [n]), T.slice(y, [axis], [0], [n - 1])), 0.5)
    if x is not None:
        width = T.subtract(T.slice(x, [len(x.shape) - 1 if len(x.shape) == 1 else axis], [1], [n]),
                           T.slice(x, [len(x.shape) - 1 if len(x.shape) == 1 else axis], [0], [n - 1]))
        return T.sum(T.multiply(mid, width), axis=axis)
    return T.scale(T.sum(mid, axis=axis), 1.0 if dx is None else float(dx))


def cumulative_trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """The running trapezoid rule along ``axis``."""
    axis = int(axis) % len(y.shape)
    n = y.shape[axis]
    mid = T.scale(T.add(T.slice(y, [axis], [1], [n]), T.slice(y, [axis], [0], [n - 1])), 0.5)
    if x is not None:
        mid = T.multiply(mid, T.subtract(T.slice(x, [axis], [1], [n]), T.slice(x, [axis], [0], [n - 1])))
    elif dx is not None:
        mid = T.scale(mid, float(dx))
    return TM.cumsum(mid, axis=axis)


def crop(x, shape=None, offsets=None, name=None):
    """The block of ``shape`` (-1: to the end) starting at ``offsets`` (default 0)."""
    rank = len(x.shape)
    offsets = [0] * rank if offsets is None else [int(o) for o in offsets]
    shape = list(x.shape) if shape is None else [int(s) for s in shape]
    ends = [x.shape[i] if s == -1 else o + s for i, (o, s) in enumerate(zip(offsets, shape))]
    return T.slice(x, list(range(rank)), offsets, ends)


def narrow(x, dim, start, length, name=None):
    """``length`` elements of axis ``dim`` from ``start``."""
    return T.slice(x, [int(dim)], [int(start)], [int(start) + int(length)])


def strided_slice(x, axes, starts, ends, strides, name=None):
    """``x[starts:ends:strides]`` along ``axes`` (op ``getitem`` when a stride is not 1)."""
    index = [slice(None)] * len(x.shape)
    for a, s, e, st in zip(axes, starts, ends, strides):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def view_as(x, other, name=None):
    return T.reshape(x, list(other.shape))


def reduce_as(x, target, name=None):
    """x summed down to ``target``'s shape (the inverse of broadcasting)."""
    lead = len(x.shape) - len(target.shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(target.shape) if d == 1 and x.shape[lead + i] != 1]
    out = T.sum(x, axis=axes, keepdim=True) if axes else x
    return T.reshape(out, list(target.shape))


def increment(x, value=1.0, name=None):
    """``x + value`` (op ``scale``)."""
    return T.scale(x, 1.0, float(value))


def log_normal(mean=1.0, std=2.0, shape=None, dtype=None, name=None):
    """``exp`` of normal draws with ``mean``/``std``."""
    from .functional import exp
    return exp(T.gaussian(shape if shape is not None else [1], float(mean), float(std), 0, dtype or "float32"))


def from_numpy(ndarray):
    """A Tensor of the array's data and dtype."""
    return T.to_tensor(np.asarray(ndarray), dtype=np.asarray(ndarray).dtype)


def asarray(obj, dtype=None, place=None, copy=None):
    return T.to_tensor(obj, dtype=dtype)


def as_tensor(data, dtype=None, place=None):
    return T.to_tensor(data, dtype=dtype)


class set_grad_enabled:  # noqa: N801  (the reference's name)
    """Turn gradient tracking on or off now; as a context manager, the old state comes back on exit."""

    def __init__(self, mode):
        self._old = (tape.grad_enabled, tape.recording)
        tape.grad_enabled = tape.recording = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        tape.grad_enabled, tape.recording = self._old
        return False


def manual_seed(value):
    """``paddle.seed(value)``."""
    return seed(value)


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None, linewidth=None):
    """Tensor printing options (NumPy's, which Tensor's repr uses)."""
    options = {k: v for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                                 ("linewidth", linewidth)) if v is not None}
    if sci_mode is not None:
        options["suppress"] = not sci_mode
    np.set_printoptions(**options)


def ravel(x, name=None):
    """x flattened to 1-D."""
    return T.reshape(x, [-1])


def vecdot(x, y, axis=-1, name=None):
    """``sum(x * y, axis)`` (broadcast)."""
    return T.sum(T.multiply(x, y), axis=axis)


def ger(x, y, name=None):
    """The outer product of two 1-D tensors."""
    return TR.outer(x, y)


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    """``beta * input + alpha * bmm(x, y)``."""
    return T.add(T.scale(input, float(beta)), T.scale(TR.bmm(x, y), float(alpha)))


def _diag_coords(n, offset):
    rows = np.arange(n) + max(-int(offset), 0)
    return rows, rows + int(offset)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Matrices with the last dim of ``input`` on diagonal ``offset`` (as the last two dims)."""
    if (dim1, dim2) not in ((-2, -1), (len(input.shape) - 1, len(input.shape))):
        raise NotImplementedError("diag_embed(): only dim1=-2, dim2=-1 are supported yet")
    n = input.shape[-1]
    m = n + abs(int(offset))
    rows, cols = _diag_coords(n, offset)
    out = T.zeros(list(input.shape[:-1]) + [m, m], input.dtype)
    out[(Ellipsis, rows, cols)] = input
    return out


def diagonal_scatter(x, y, offset=0, axis1=0, axis2=1, name=None):
    """x with its diagonal ``offset`` of the (axis1, axis2) planes replaced by y (axes adjacent)."""
    rank = len(x.shape)
    a1, a2 = int(axis1) % rank, int(axis2) % rank
    if a2 != a1 + 1:
        raise NotImplementedError("diagonal_scatter(): only adjacent axis1 < axis2 are supported yet")
    n = y.shape[-1]
    rows, cols = _diag_coords(n, offset)
    out = T.assign(x)
    out[(slice(None),) * a1 + (rows, cols)] = TM.moveaxis(y, -1, a1) if rank > 2 else y
    return out


def vander(x, n=None, increasing=False, name=None):
    """The Vandermonde matrix of a 1-D x: columns x**(n-1) ... x**0 (or increasing)."""
    n = x.shape[0] if n is None else int(n)
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    exps = T.assign(powers.astype(x.dtype.numpy))
    base = TM.expand(T.unsqueeze(x, [1]), [x.shape[0], n])
    return T.pow(base, TM.expand(T.unsqueeze(exps, [0]), [x.shape[0], n]))


def index_put(x, indices, value, accumulate=False, name=None):
    """x with ``value`` put at the integer index tensors ``indices`` (added with ``accumulate``)."""
    if not accumulate:
        out = T.assign(x)
        out[tuple(indices)] = value
        return out
    coords = TM.stack([T.cast(i, "int64") for i in TM.broadcast_tensors(list(indices))], axis=-1)
    target = list(coords.shape[:-1]) + list(x.shape[len(indices):])
    if not hasattr(value, "shape"):
        value = T.full(target, value, x.dtype)
    elif list(value.shape) != target:
        value = TM.expand(value, target)
    return TS.scatter_nd_add(x, coords, value)


def where_(condition, x=None, y=None, name=None):
    """In-place ``where``: x becomes ``where(condition, x, y)`` (eager)."""
    from .tensor_index import make_inplace
    return make_inplace(lambda target, cond, other: TS.where(cond, target, other), "where_")(x, condition, y)


def get_default_dtype():
    """headrace's default floating dtype: float32 (it cannot be changed)."""
    return "float32"


__all__ = ["baddbmm", "diag_embed", "diagonal_scatter", "get_default_dtype", "ger", "index_put", "ravel", "vander",
           "vecdot", "where_",
           "as_tensor", "asarray", "block_diag", "cartesian_prod", "cdist", "crop", "cumulative_trapezoid",
           "from_numpy", "increment", "log_normal", "manual_seed", "narrow", "quantile", "reduce_as",
           "set_grad_enabled", "set_printoptions", "strided_slice", "tensordot", "trapezoid", "view_as"]
