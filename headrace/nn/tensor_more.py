"""Further ``paddle.*`` composites (both modes, gradients from the ops they are built of):
multigammaln, renorm, masked_scatter, pdist, combinations, histogram_bin_edges, multiplex,
shard_index, softmax, and random draws built on uniform/gamma/binomial ops (standard_gamma,
binomial, and the in-place refills bernoulli_, cauchy_, geometric_).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..ops.apply import apply_op_single
from . import functional as F
from . import tensor as T
from . import tensor_manip as TM
from . import tensor_reduce as TR
from . import tensor_search as TS
from .tensor_index import make_inplace


def _op(op, inputs, attrs=None):
    return apply_op_single(op, inputs, attrs or {}, name_key=T._key(op))


def multigammaln(x, p, name=None):
    """The log multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j<p} lgamma(x - j / 2)``."""
    terms = [_op("lgamma", {"X": T.scale(x, 1.0, -j / 2.0)}) for j in range(int(p))]
    return T.scale(T.add_n(terms), 1.0, p * (p - 1) / 4.0 * math.log(math.pi))


def renorm(x, p, axis, max_norm, name=None):
    """Each slice along ``axis`` rescaled so its p-norm is at most ``max_norm``."""
    rank = len(x.shape)
    axis = int(axis) % rank
    perm = [axis] + [a for a in range(rank) if a != axis]
    rows = T.reshape(T.transpose(x, perm), [x.shape[axis], -1])
    norms = TR._p_norm(rows, float(p), 1, True, False)
    limit = T.full([], float(max_norm), x.dtype)
    over = _op("greater_than", {"X": norms, "Y": limit})
    scale = TS.where(over, T.divide(T.full([], float(max_norm), x.dtype), T.scale(norms, 1.0, 1e-7)),
                     T.ones([], x.dtype))
    shape = [1] * rank
    shape[axis] = x.shape[axis]
    return T.multiply(x, T.reshape(scale, shape))


def masked_scatter(x, mask, value, name=None):
    """x with the positions where ``mask`` (broadcast) is True filled, in row-major order, by the
    first elements of ``value``."""
    mask = TM.expand(mask, list(x.shape)) if list(mask.shape) != list(x.shape) else mask
    flat_mask = T.reshape(mask, [-1])
    order = T.subtract(TM.cumsum(T.cast(flat_mask, "int64")), T.ones([], "int64"))
    order = _op("elementwise_max", {"X": order, "Y": T.zeros([], "int64")})
    picked = TS.gather(T.reshape(value, [-1]), order)
    return TS.where(mask, T.reshape(picked, list(x.shape)), x)


def pdist(x, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """The p-norm distances between every pair of rows of x [N, M] (i < j), a 1-D tensor."""
    n = x.shape[0]
    rows, cols = np.triu_indices(n, 1)
    a = TS.gather(x, T.assign(rows.astype(np.int64)))
    b = TS.gather(x, T.assign(cols.astype(np.int64)))
    return TR.norm(T.subtract(a, b), p=float(p), axis=-1)


def combinations(x, r=2, with_replacement=False, name=None):
    """Every length-``r`` combination of the elements of the 1-D x, one row each."""
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = np.array(list(make(range(x.shape[0]), int(r))), dtype=np.int64).reshape(-1, int(r))
    return T.reshape(TS.gather(x, T.assign(index.reshape(-1))), [index.shape[0], int(r)])


def histogram_bin_edges(input, bins=100, min=0.0, max=0.0, name=None):  # noqa: A002
    """The ``bins + 1`` edges ``histogram`` uses (the data's range when min and max are both 0)."""
    x = T.cast(T.reshape(input, [-1]), "float32") if str(input.dtype) != "float64" else T.reshape(input, [-1])
    if min == 0 and max == 0:
        lo, hi = T.min(x), T.max(x)
    else:
        lo, hi = T.full([], float(min), x.dtype), T.full([], float(max), x.dtype)
    same = _op("equal", {"X": lo, "Y": hi})
    lo = TS.where(same, T.scale(lo, 1.0, -1.0), lo)
    hi = TS.where(same, T.scale(hi, 1.0, 1.0), hi)
    steps = T.assign(np.linspace(0.0, 1.0, int(bins) + 1).astype(x.dtype.numpy))
    return T.add(lo, T.multiply(T.subtract(hi, lo), steps))


def multiplex(inputs, index, name=None):
    """``out[i] = inputs[index[i]][i]``."""
    stacked = TM.stack(list(inputs), axis=0)
    rows = T.assign(np.arange(inputs[0].shape[0], dtype=np.int64).reshape(-1, 1))
    coords = T.concat([T.cast(T.reshape(index, [-1, 1]), "int64"), rows], axis=1)
    return TS.gather_nd(stacked, coords)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002
    """Labels of shard ``shard_id`` made local (``label - shard_id * shard_size``); others become
    ``ignore_value``."""
    size = (int(index_num) + int(nshards) - 1) // int(nshards)
    dtype = input.dtype
    owner = _op("elementwise_floordiv", {"X": input, "Y": T.full([], size, dtype)})
    mine = _op("equal", {"X": owner, "Y": T.full([], int(shard_id), dtype)})
    local = _op("elementwise_mod", {"X": input, "Y": T.full([], size, dtype)})
    return TS.where(mine, local, T.full([], int(ignore_value), dtype))


def softmax(x, axis=-1, dtype=None, name=None):
    """``paddle.nn.functional.softmax``."""
    return F.softmax(x, axis=axis, dtype=dtype)


def standard_gamma(x, name=None):
    """Gamma(x, 1) draws, elementwise shapes x."""
    return _op("standard_gamma", {"X": x})


def binomial(count, prob, name=None):
    """Binomial(count, prob) draws (int64)."""
    return _op("binomial", {"Count": count, "Prob": prob})


def _uniform_like(x):
    return T.uniform(list(x.shape), str(x.dtype), 0.0, 1.0)


def bernoulli_(x, p=0.5, name=None):
    """x refilled with Bernoulli(p) draws (in place)."""
    draw = lambda t: T.cast(_op("less_than", {"X": _uniform_like(t), "Y": T.full([], float(p), t.dtype)}),  # noqa: E731
                            t.dtype)
    return make_inplace(draw, "bernoulli_")(x)


def cauchy_(x, loc=0.0, scale=1.0, name=None):
    """x refilled with Cauchy(loc, scale) draws: ``loc + scale tan(pi (u - 1/2))`` (in place)."""
    draw = lambda t: T.scale(_op("tan", {"X": T.scale(_uniform_like(t), math.pi, -math.pi / 2)}),  # noqa: E731
                             float(scale), float(loc))
    return make_inplace(draw, "cauchy_")(x)


def geometric_(x, probs, name=None):
    """x refilled with Geometric(probs) draws on {1, 2, ...}: ``ceil(log(1 - u) / log(1 - p))``."""
    def draw(t):
        u = T.scale(_uniform_like(t), -1.0, 1.0)          # 1 - u in (0, 1]
        k = _op("ceil", {"X": T.scale(F.log(u), 1.0 / math.log(1.0 - float(probs)))})
        return _op("elementwise_max", {"X": k, "Y": T.ones([], t.dtype)})   # u == 0 would give 0
    return make_inplace(draw, "geometric_")(x)


def _nan_sorted(x, axis):
    """(x sorted along axis with NaN moved last, the count of non-NaN values, keepdim)."""
    isnan = _op("isnan_v2", {"X": x})
    filled = TS.where(isnan, T.full([], float("inf"), x.dtype), x)
    valid = T.cast(_op("logical_not", {"X": isnan}), x.dtype)
    return TS.sort(filled, axis=axis), T.sum(valid, axis=axis, keepdim=True)


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """The q-th quantile(s) of the values that are not NaN along ``axis`` (all elements when None),
    linear interpolation; NaN where a line holds only NaN.  A list ``q`` stacks on a new axis 0."""
    if interpolation != "linear":
        raise NotImplementedError(f"nanquantile(): interpolation={interpolation!r} is not supported yet")
    rank = len(x.shape)
    flat = axis is None
    if flat:
        x, axis = T.reshape(x, [-1]), 0
    axis = int(axis) % len(x.shape)
    s, n = _nan_sorted(x, axis)
    qs = [q] if not isinstance(q, (list, tuple)) else list(q)
    outs = []
    for value in qs:
        if not 0 <= value <= 1:
            raise ValueError(f"nanquantile(): q must lie in [0, 1], got {value}")
        pos = _op("elementwise_max", {"X": T.scale(n, float(value), -float(value)), "Y": T.zeros([], x.dtype)})
        lo, hi = _op("floor", {"X": pos}), _op("ceil", {"X": pos})
        empty = _op("equal", {"X": n, "Y": T.zeros([], x.dtype)})
        zero = T.zeros([], x.dtype)     # an all-NaN line picks +inf: kept out of the arithmetic
        a = TS.where(empty, zero, TS.take_along_axis(s, T.cast(lo, "int64"), axis))
        b = TS.where(empty, zero, TS.take_along_axis(s, T.cast(hi, "int64"), axis))
        out = T.add(a, T.multiply(T.subtract(b, a), T.subtract(pos, lo)))
        out = TS.where(empty, T.full([], float("nan"), x.dtype), out)
        if flat:
            out = T.reshape(out, [1] * rank if keepdim else [])
        elif not keepdim:
            out = T.squeeze(out, [axis])
        outs.append(out)
    return outs[0] if not isinstance(q, (list, tuple)) else TM.stack(outs, axis=0)


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    """The median of the values that are not NaN (the mean of the two middle ones for an even
    count; NaN for an all-NaN line)."""
    if mode != "avg":
        raise NotImplementedError(f"nanmedian(): mode={mode!r} is not supported yet (only 'avg')")
    return nanquantile(x, 0.5, axis=axis, keepdim=keepdim)


__all__ = ["nanmedian", "nanquantile", "bernoulli_", "binomial", "cauchy_", "combinations", "geometric_", "histogram_bin_edges",
           "masked_scatter", "multigammaln", "multiplex", "pdist", "renorm", "shard_index", "softmax",
           "standard_gamma"]
