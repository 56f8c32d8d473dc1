"""Matrix products: ``mul`` (the reference's flatten-then-multiply used by ``fc``), ``matmul_v2``
(NumPy matmul semantics) and ``matmul`` (v1: matmul_v2 scaled by ``alpha``).

Dims may be -1 at build time: an unknown inner dim is never reported as a mismatch, an unknown
batch dim passes through to the output.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .infer_helpers import BroadcastError, matmul_shape, prod
from .registry import register


# --- mul: X flattened to [M, K] at x_num_col_dims, Y to [K, N] at y_num_col_dims -------------------
def _num_col_dims(ctx, slot, attr):
    shape = ctx.shape(slot)
    n = ctx.attr(attr)
    if not 1 <= n < len(shape):
        ctx.fail_attr(attr, f"a value in [1, {len(shape)}) for {slot} of shape {fmt_shape(shape)}", n)
    return shape, n


def _mul_infer(ctx):
    dtype = ctx.check_same_dtype("X", "Y")
    x_shape, xn = _num_col_dims(ctx, "X", "x_num_col_dims")
    y_shape, yn = _num_col_dims(ctx, "Y", "y_num_col_dims")
    x_inner, y_inner = prod(x_shape[xn:]), prod(y_shape[:yn])
    if x_inner != y_inner and x_inner != -1 and y_inner != -1:
        ctx.fail("Y", f"a shape whose first {yn} dim(s) hold {x_inner} elements, matching X "
                      f"{fmt_shape(x_shape)} flattened at x_num_col_dims={xn}",
                 f"{fmt_shape(y_shape)} ({y_inner} elements at y_num_col_dims={yn})")
    ctx.set("Out", x_shape[:xn] + y_shape[yn:], dtype)


def _mul_kernel(ins, attrs):
    x, y = ins["X"], ins["Y"]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2 = x.reshape(prod(x.shape[:xn]), prod(x.shape[xn:]))
    y2 = y.reshape(prod(y.shape[:yn]), prod(y.shape[yn:]))
    return {"Out": np.matmul(x2, y2).reshape(x.shape[:xn] + y.shape[yn:])}


register(
    "mul",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"x_num_col_dims": 1, "y_num_col_dims": 1},
    infer=_mul_infer,
    kernel=_mul_kernel,
    doc="Out = X (flattened to 2-D at x_num_col_dims) @ Y (flattened at y_num_col_dims), "
        "shaped X.shape[:x_num_col_dims] + Y.shape[y_num_col_dims:]",
)


# --- matmul_v2 / matmul ----------------------------------------------------------------------------
def _infer_matmul(trans_x_attr, trans_y_attr):
    def infer(ctx):
        dtype = ctx.check_same_dtype("X", "Y")
        x_shape, y_shape = ctx.shape("X"), ctx.shape("Y")
        for slot, shape in (("X", x_shape), ("Y", y_shape)):
            if len(shape) == 0:
                ctx.fail(slot, "rank >= 1", f"shape {fmt_shape(shape)} (rank 0)")
        trans_x, trans_y = bool(ctx.attr(trans_x_attr)), bool(ctx.attr(trans_y_attr))
        try:
            out = matmul_shape(x_shape, y_shape, trans_x, trans_y)
        except BroadcastError:
            ctx.fail("Y", f"a shape matching X {fmt_shape(x_shape)} for a matrix product "
                          f"({trans_x_attr}={trans_x}, {trans_y_attr}={trans_y}: inner dims equal, "
                          "batch dims broadcastable)", fmt_shape(y_shape))
        ctx.set("Out", out, dtype)
    return infer


def _matmul_product(x, y, trans_x, trans_y):
    """NumPy matmul; a transpose flag swaps the last two dims of an operand of rank >= 2."""
    if trans_x and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if trans_y and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    return np.asarray(np.matmul(x, y))


def _matmul_v2_kernel(ins, attrs):
    return {"Out": _matmul_product(ins["X"], ins["Y"], attrs["trans_x"], attrs["trans_y"])}


register(
    "matmul_v2",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"trans_x": False, "trans_y": False},
    infer=_infer_matmul("trans_x", "trans_y"),
    kernel=_matmul_v2_kernel,
    doc="Out = op(X) @ op(Y), NumPy matmul semantics (1-D operands, broadcast batch dims); "
        "op transposes the last two dims when trans_x/trans_y is set",
)


def _matmul_v1_kernel(ins, attrs):
    out = _matmul_product(ins["X"], ins["Y"], attrs["transpose_X"], attrs["transpose_Y"])
    alpha = attrs["alpha"]
    if alpha != 1.0:
        out = np.asarray(out * alpha, dtype=out.dtype)
    return {"Out": out}


register(
    "matmul",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
    infer=_infer_matmul("transpose_X", "transpose_Y"),
    kernel=_matmul_v1_kernel,
    doc="Out = alpha * (op(X) @ op(Y)), the shape rules of matmul_v2",
)
