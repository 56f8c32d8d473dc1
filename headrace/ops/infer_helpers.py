"""Shape rules shared by several op families: broadcasting with Paddle's ``axis``, reductions,
matrix products.  Dims may be -1 (unknown at build time)."""
from __future__ import annotations

from ..core.errors import fmt_shape


class BroadcastError(ValueError):
    pass


def _broadcast_dim(a: int, b: int) -> int:
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if a == -1:
        return b  # the unknown dim must be b or 1 at run time: either way the result is b
    if b == -1:
        return a
    raise BroadcastError


def aligned_shapes(x_shape, y_shape, axis: int):
    """Shapes X and Y take before NumPy broadcasting, per Paddle's elementwise ``axis`` rule.

    ``axis == -1``: plain NumPy broadcasting (trailing dims aligned).  ``axis >= 0``: the lower-rank
    operand is aligned with the other's dims starting at ``axis`` (trailing size-1 dims of it may be
    dropped to fit).  Raises BroadcastError when the ranks cannot be aligned.
    """
    x_shape, y_shape = tuple(x_shape), tuple(y_shape)
    if axis == -1 or len(x_shape) == len(y_shape):
        return x_shape, y_shape
    big, small, swap = (x_shape, y_shape, False) if len(x_shape) > len(y_shape) else (y_shape, x_shape, True)
    if axis < 0:
        axis += len(big)
    while axis + len(small) > len(big) and small and small[-1] == 1:
        small = small[:-1]
    if axis < 0 or axis + len(small) > len(big):
        raise BroadcastError
    small = (1,) * axis + small + (1,) * (len(big) - axis - len(small))
    return (small, big) if swap else (big, small)


def broadcast_shape(x_shape, y_shape, axis: int = -1):
    """Output shape of an elementwise op; raises BroadcastError on mismatch."""
    xs, ys = aligned_shapes(x_shape, y_shape, axis)
    n = max(len(xs), len(ys))
    xs = (1,) * (n - len(xs)) + xs
    ys = (1,) * (n - len(ys)) + ys
    return tuple(_broadcast_dim(a, b) for a, b in zip(xs, ys))


def describe_broadcast(x_shape, y_shape, axis: int) -> str:
    return f"shape broadcastable to {fmt_shape(x_shape)} with axis={axis}"


def normalize_axes(dims, rank: int, what: str = "dim"):
    """Negative axes made positive; raises ValueError when out of range or repeated."""
    out = []
    for d in dims:
        d = int(d)
        if not -max(rank, 1) <= d < max(rank, 1):
            raise ValueError(f"{what} {d} is out of range for rank {rank}")
        d = d % max(rank, 1)
        if d in out:
            raise ValueError(f"{what} {d} is repeated")
        out.append(d)
    return out


def reduce_shape(shape, dims, keep_dim: bool, reduce_all: bool):
    """Output shape of a reduction over ``dims`` (all dims when ``reduce_all`` or dims empty)."""
    rank = len(shape)
    if reduce_all or dims is None or len(dims) == 0 or rank == 0:
        axes = list(range(rank))
    else:
        axes = normalize_axes(dims, rank)
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), axes
    return tuple(d for i, d in enumerate(shape) if i not in axes), axes


def matmul_shape(x_shape, y_shape, trans_x: bool, trans_y: bool):
    """Output shape of ``matmul_v2`` (NumPy matmul semantics incl. 1-D operands and batching).

    Raises BroadcastError on an inner-dimension or batch mismatch.
    """
    xs, ys = list(x_shape), list(y_shape)
    x_vec = len(xs) == 1
    y_vec = len(ys) == 1
    if x_vec:
        xs = [1, xs[0]]
    elif trans_x:
        xs[-1], xs[-2] = xs[-2], xs[-1]
    if y_vec:
        ys = [ys[0], 1]
    elif trans_y:
        ys[-1], ys[-2] = ys[-2], ys[-1]
    k1, k2 = xs[-1], ys[-2]
    if k1 != k2 and k1 != -1 and k2 != -1:
        raise BroadcastError
    batch = broadcast_shape(tuple(xs[:-2]), tuple(ys[:-2]))
    out = list(batch) + [xs[-2], ys[-1]]
    if y_vec:
        out.pop(-1)
    if x_vec:
        out.pop(-2 if not y_vec else -1)
    return tuple(out)


def prod(dims) -> int:
    """Product of dims; -1 if any is unknown."""
    result = 1
    for d in dims:
        if d < 0:
            return -1
        result *= d
    return result
