"""``paddle.*`` reductions and products (both modes): prod, logsumexp, amax/amin, all/any,
std/var, count_nonzero, nansum/nanmean, norm (also ``paddle.linalg.norm``), dot, bmm, mm, mv,
outer, inner, einsum.

``axis=None`` reduces every axis; ``std``/``var`` are unbiased by default (divide by N - 1), as
the reference.  ``norm``: ``p='fro'`` (or None) is the 2-norm of all elements (axis None) or of
the given axes; a number ``p`` with axis None is the vector p-norm of the flattened x, with an int
axis the p-norm along it; 'nuc' and other matrix norms raise ``NotImplementedError``.
"""
from __future__ import annotations

import numbers

from ..ops.apply import apply_op_single
from . import tensor as T


def prod(x, axis=None, keepdim=False, dtype=None, name=None):
    """The product over ``axis`` (every axis when None)."""
    if dtype is not None:
        x = T.cast(x, dtype)
    return T._reduce("reduce_prod", x, axis, keepdim, "prod", name)


def logsumexp(x, axis=None, keepdim=False, name=None):
    """``log(sum(exp(x)))`` over ``axis``, without overflow."""
    return T._reduce("logsumexp", x, axis, keepdim, "logsumexp", name)


def amax(x, axis=None, keepdim=False, name=None):
    """The maximum over ``axis``; tied maxima share the gradient evenly."""
    return T._reduce("reduce_amax", x, axis, keepdim, "amax", name)


def amin(x, axis=None, keepdim=False, name=None):
    """The minimum over ``axis``; tied minima share the gradient evenly."""
    return T._reduce("reduce_amin", x, axis, keepdim, "amin", name)


def all(x, axis=None, keepdim=False, name=None):  # noqa: A001
    """Whether every element over ``axis`` is nonzero (bool)."""
    return T._reduce("reduce_all", x, axis, keepdim, "all", name)


def any(x, axis=None, keepdim=False, name=None):  # noqa: A001
    """Whether some element over ``axis`` is nonzero (bool)."""
    return T._reduce("reduce_any", x, axis, keepdim, "any", name)


def _count(x, axis):
    shape = list(x.shape)
    if axis is None:
        axes = range(len(shape))
    else:
        axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def var(x, axis=None, unbiased=True, keepdim=False, name=None):
    """The variance over ``axis`` (unbiased: divided by N - 1)."""
    n = _count(x, axis)
    if n < 0:
        raise ValueError("var()/std(): the reduced dims must be known")
    centered = T.subtract(x, T.mean(x, axis=axis, keepdim=True))
    total = T.sum(T.multiply(centered, centered), axis=axis, keepdim=keepdim)
    return T.scale(total, 1.0 / max(n - 1 if unbiased else n, 1))


def std(x, axis=None, unbiased=True, keepdim=False, name=None):
    """The standard deviation over ``axis`` (unbiased by default)."""
    from .functional import sqrt
    return sqrt(var(x, axis, unbiased, keepdim))


def count_nonzero(x, axis=None, keepdim=False, name=None):
    """The number of nonzero elements over ``axis`` (int64)."""
    nz = apply_op_single("not_equal", {"X": x, "Y": T.zeros([], x.dtype)}, name_key=T._key("not_equal"))
    return T.sum(T.cast(nz, "int64"), axis=axis, keepdim=keepdim)


def nansum(x, axis=None, dtype=None, keepdim=False, name=None):
    """The sum over ``axis`` with NaN counted as 0."""
    from .tensor_search import where
    clean = where(apply_op_single("isnan_v2", {"X": x}, name_key=T._key("isnan")), T.zeros([], x.dtype), x)
    return T.sum(clean, axis=axis, dtype=dtype, keepdim=keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    """The mean over ``axis`` of the elements that are not NaN."""
    isnan = apply_op_single("isnan_v2", {"X": x}, name_key=T._key("isnan"))
    keep = T.cast(apply_op_single("logical_not", {"X": isnan}, name_key=T._key("logical_not")), x.dtype)
    return T.divide(nansum(x, axis, keepdim=keepdim), T.sum(keep, axis=axis, keepdim=keepdim))


def _p_norm(x, p, axis, keepdim, asvector):
    return apply_op_single("p_norm", {"X": x}, {"porder": float(p), "axis": int(axis), "keepdim": bool(keepdim),
                                                "asvector": bool(asvector)}, name_key=T._key("p_norm"))


def norm(x, p=None, axis=None, keepdim=False, name=None):
    """The vector or Frobenius norm (see the module docstring)."""
    if p in (None, "fro"):
        if axis is None:
            return _p_norm(x, 2.0, -1, keepdim, True)
        axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
        if len(axes) == 1:
            return _p_norm(x, 2.0, axes[0], keepdim, False)
        from .functional import sqrt
        return sqrt(T.sum(T.multiply(x, x), axis=axes, keepdim=keepdim))
    if isinstance(p, str):
        raise NotImplementedError(f"norm(): p={p!r} is not supported yet (use 'fro' or a number)")
    if axis is None:
        return _p_norm(x, p, -1, keepdim, True)
    if isinstance(axis, numbers.Integral) or len(axis) == 1:
        return _p_norm(x, p, axis if isinstance(axis, numbers.Integral) else axis[0], keepdim, False)
    raise NotImplementedError(f"norm(): matrix norms with p={p!r} over axes {list(axis)} are not supported yet")


def dist(x, y, p=2, name=None):
    """The p-norm of ``x - y`` (broadcast)."""
    return norm(T.subtract(x, y), p=float(p))


def dot(x, y, name=None):
    """The inner product of 1-D tensors (a 0-D result) or of the rows of 2-D tensors ([N])."""
    return apply_op_single("dot", {"X": x, "Y": y}, name_key=T._key("dot", name))


def bmm(x, y, name=None):
    """Batched matrix product of [B, N, K] and [B, K, M] tensors (op ``matmul_v2``)."""
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError(f"bmm(): both inputs must be 3-D, got shapes {list(x.shape)} and {list(y.shape)}")
    if -1 not in (x.shape[0], y.shape[0]) and x.shape[0] != y.shape[0]:
        raise ValueError(f"bmm(): batch sizes differ: {x.shape[0]} and {y.shape[0]}")
    return T.matmul(x, y, name=name)


def mm(input, mat2, name=None):  # noqa: A002
    """The matrix product (``matmul``)."""
    return T.matmul(input, mat2, name=name)


def mv(x, vec, name=None):
    """Matrix [M, N] times vector [N]."""
    return T.matmul(x, vec, name=name)


def outer(x, y, name=None):
    """``x[i] * y[j]`` for the flattened x and y."""
    return T.multiply(T.reshape(x, [-1, 1]), T.reshape(y, [1, -1]))


def inner(x, y, name=None):
    """The sum over the last axes of x and y of their products (``x @ y^T`` on the last axis)."""
    letters = "abcdefghijklm"
    xs, ys = letters[:len(x.shape) - 1], letters[len(x.shape) - 1:len(x.shape) + len(y.shape) - 2]
    return einsum(f"{xs}z,{ys}z->{xs}{ys}", x, y)


def einsum(equation, *operands):
    """Einstein summation of one or two operands (no '...', no repeated subscript in one operand:
    those raise ``NotImplementedError``)."""
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
    return apply_op_single("einsum", {"Operands": ops}, {"equation": str(equation)}, name_key=T._key("einsum"))


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    """``beta * input + alpha * (x @ y)``."""
    return T.add(T.scale(input, float(beta)), T.scale(T.matmul(x, y), float(alpha)))


__all__ = ["addmm", "all", "amax", "amin", "any", "bmm", "count_nonzero", "dist", "dot", "einsum", "inner",
           "logsumexp", "mm", "mv", "nanmean", "nansum", "norm", "outer", "prod", "std", "var"]
