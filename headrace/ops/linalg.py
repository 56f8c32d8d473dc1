"""Matrix products: ``mul`` (the reference's flatten-then-multiply used by ``fc``), ``matmul_v2``
(NumPy matmul semantics) and ``matmul`` (v1: matmul_v2 scaled by ``alpha``).

Dims may be -1 at build time: an unknown inner dim is never reported as a mismatch, an unknown
batch dim passes through to the output.

Gradients: ``mul_grad`` is two BLAS calls on 2-D views (dX = dOut @ Y^T, dY = X^T @ dOut, each only
when wanted).  ``matmul_v2_grad``/``matmul_grad`` compute each operand's gradient in the operand's
own layout (transposes are views handed to BLAS), then sum it over the batch dims the operand was
broadcast along; a 2-D operand against a batched one is handled by flattening the batch into the
matrix rows, one BLAS call instead of a product per batch element and a sum.

Buffers (``ops/kernel.py``): every kernel here writes a product into a handed ``out`` buffer of
the result's exact shape and dtype (C-contiguous, so BLAS writes it directly; the same BLAS call,
bit-identical), except where a 1-D operand or a summed-over batch dim makes the product's shape
differ from the output's.  No op here overwrites an input (no ``inplace``): a matrix product
cannot be computed into its own operand.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import binary, unbroadcast
from .gemm import matmul
from .gradrule import Gradient, grad_slot
from .infer_helpers import BroadcastError, matmul_shape, prod
from .registry import register

X_GRAD, Y_GRAD, OUT_GRAD, BIAS_GRAD = grad_slot("X"), grad_slot("Y"), grad_slot("Out"), grad_slot("Bias")


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


def _mul_kernel(ins, attrs, ctx):
    x, y = ins["X"], ins["Y"]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2 = x.reshape(prod(x.shape[:xn]), prod(x.shape[xn:]))
    y2 = y.reshape(prod(y.shape[:yn]), prod(y.shape[yn:]))
    shape = x.shape[:xn] + y.shape[yn:]
    buf = ctx.buffer("Out", shape, np.result_type(x, y))
    if buf is not None:
        matmul(x2, y2, out=buf.reshape(x2.shape[0], y2.shape[1]))
        return {"Out": buf}
    return {"Out": matmul(x2, y2).reshape(shape)}




def _dot_into(a, b, buf, shape):
    """``a @ b`` (2-D) as ``shape``, computed into ``buf`` (that shape) when given."""
    if buf is None:
        return matmul(a, b).reshape(shape)
    matmul(a, b, out=buf.reshape(a.shape[0], b.shape[1]))
    return buf


def _mul_grad_kernel(ins, attrs, ctx):
    x, y, dout = ins["X"], ins["Y"], ins[OUT_GRAD]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    m, k, n = prod(x.shape[:xn]), prod(x.shape[xn:]), prod(y.shape[yn:])
    d2 = dout.reshape(m, n)
    result = {}
    if X_GRAD in ctx.wanted:
        buf = ctx.buffer(X_GRAD, x.shape, d2.dtype)
        result[X_GRAD] = _dot_into(d2, y.reshape(k, n).T, buf, x.shape)
    if Y_GRAD in ctx.wanted:
        buf = ctx.buffer(Y_GRAD, y.shape, d2.dtype)
        result[Y_GRAD] = _dot_into(x.reshape(m, k).T, d2, buf, y.shape)
    return result


register(
    "mul",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"x_num_col_dims": 1, "y_num_col_dims": 1},
    infer=_mul_infer,
    kernel=_mul_kernel,
    grad=Gradient(_mul_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y"), buffers=True),
    buffers=True,
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


_MATMUL_V2_INFER = _infer_matmul("trans_x", "trans_y")


def _t(a):
    return a.swapaxes(-1, -2)


def _mm(a, b, buf=None):
    """``a @ b``; a batched ``a`` times a 2-D ``b`` is one BLAS call on ``a``'s rows.  ``buf``:
    a buffer of the product's shape (or None)."""
    if b.ndim == 2 and a.ndim > 2:
        shape = a.shape[:-1] + (b.shape[-1],)
        if buf is None:
            return matmul(a.reshape(-1, a.shape[-1]), b).reshape(shape)
        matmul(a.reshape(-1, a.shape[-1]), b, out=buf.reshape(-1, b.shape[-1]))
        return buf
    return matmul(a, b, out=buf)


def _product_shape(a, b):
    """The shape of ``a @ b`` for operands of rank >= 2 (None for a 1-D operand)."""
    if a.ndim < 2 or b.ndim < 2:
        return None
    return np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])


def _matmul_product(x, y, trans_x, trans_y, ctx):
    """NumPy matmul; a transpose flag swaps the last two dims of an operand of rank >= 2."""
    if trans_x and x.ndim >= 2:
        x = _t(x)
    if trans_y and y.ndim >= 2:
        y = _t(y)
    shape = _product_shape(x, y) if ctx.out else None
    buf = ctx.buffer("Out", shape, np.result_type(x, y)) if shape is not None else None
    if x.ndim > 2 and y.ndim == 2 and not trans_x:
        return _mm(x, y, buf)
    return np.asarray(matmul(x, y, out=buf))


def _sum_to(grad, shape):
    """Sum a gradient computed at the broadcast batch shape down to an operand's ``shape``."""
    if grad.shape == tuple(shape):
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and grad.shape[lead + i] != 1)
    return grad.sum(axis=axes).reshape(shape) if axes else grad.reshape(shape)


def _rows(a):
    """A batched matrix as one 2-D matrix of all its rows (a view when ``a`` is contiguous)."""
    return a.reshape(-1, a.shape[-1])


def _matmul_grads_2d(x, y, d, tx, ty, wanted):
    """``_matmul_grads`` of 2-D operands with alpha 1 and no buffers handed: the same products
    (the same bits) without the batch and 1-D bookkeeping (a 16x16 layer's gradient on a batch
    of 8: 9.6 -> 5.6 us)."""
    result = {}
    if X_GRAD in wanted:
        result[X_GRAD] = matmul(y.T if ty else y, d.T) if tx else matmul(d, y if ty else y.T)
    if Y_GRAD in wanted:
        result[Y_GRAD] = matmul(d.T, x.T if tx else x) if ty else matmul(x if tx else x.T, d)
    return result


def _matmul_grads(x, y, dout, trans_x, trans_y, alpha, ctx):
    """X@GRAD / Y@GRAD of ``alpha * op(X) @ op(Y)``, each only when wanted; a handed buffer is
    used when neither operand is 1-D and the operand's batch dims are the output's (nothing to
    sum)."""
    if x.ndim == 2 and y.ndim == 2 and alpha == 1.0 and not ctx.out:
        return _matmul_grads_2d(x, y, dout, trans_x, trans_y, ctx.wanted)
    x_vec, y_vec = x.ndim == 1, y.ndim == 1
    x2 = x.reshape(1, -1) if x_vec else x          # 1-D operands as the matmul promotes them
    y2 = y.reshape(-1, 1) if y_vec else y
    tx, ty = trans_x and not x_vec, trans_y and not y_vec
    d = dout
    if y_vec:
        d = d[..., None]
    if x_vec:
        d = d[..., None, :]                          # d: [..., M, N]
    plain = not (x_vec or y_vec)
    result = {}
    if X_GRAD in ctx.wanted:                         # in X's layout: [..., M, K] or [..., K, M]
        buf = ctx.buffer(X_GRAD, x.shape, d.dtype) if plain and x.shape[:-2] == d.shape[:-2] else None
        if not tx:
            dx = _mm(d, y2 if ty else _t(y2), buf)
        else:
            dx = matmul(_t(y2) if ty else y2, _t(d), out=buf)
        dx = _sum_to(dx, x2.shape)
        if dx.shape != x.shape:
            dx = dx.reshape(x.shape)
        if alpha != 1.0:
            dx *= alpha
        result[X_GRAD] = dx
    if Y_GRAD in ctx.wanted:                         # in Y's layout: [..., K, N] or [..., N, K]
        buf = ctx.buffer(Y_GRAD, y.shape, d.dtype) if plain else None
        if y2.ndim == 2 and d.ndim > 2 and not tx:   # batch folded into the rows: one product
            dy = matmul(_rows(x2).T, _rows(d), out=buf) if not ty else matmul(_rows(d).T, _rows(x2), out=buf)
        else:
            if y.shape[:-2] != d.shape[:-2]:
                buf = None
            if not ty:
                dy = matmul(x2 if tx else _t(x2), d, out=buf)
            else:
                dy = matmul(_t(d), _t(x2) if tx else x2, out=buf)
        dy = _sum_to(dy, y2.shape)
        if dy.shape != y.shape:
            dy = dy.reshape(y.shape)
        if alpha != 1.0:
            dy *= alpha
        result[Y_GRAD] = dy
    return result


def _matmul_v2_kernel(ins, attrs, ctx):
    return {"Out": _matmul_product(ins["X"], ins["Y"], attrs["trans_x"], attrs["trans_y"], ctx)}




def _matmul_v2_grad_kernel(ins, attrs, ctx):
    return _matmul_grads(ins["X"], ins["Y"], ins[OUT_GRAD], attrs["trans_x"], attrs["trans_y"], 1.0, ctx)


register(
    "matmul_v2",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"trans_x": False, "trans_y": False},
    infer=_MATMUL_V2_INFER,
    kernel=_matmul_v2_kernel,
    grad=Gradient(_matmul_v2_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y"), buffers=True),
    buffers=True,
    doc="Out = op(X) @ op(Y), NumPy matmul semantics (1-D operands, broadcast batch dims); "
        "op transposes the last two dims when trans_x/trans_y is set",
)



def _matmul_v1_kernel(ins, attrs, ctx):
    product = _matmul_product(ins["X"], ins["Y"], attrs["transpose_X"], attrs["transpose_Y"], ctx)
    alpha = attrs["alpha"]
    if alpha != 1.0:
        if product is ctx.out.get("Out"):   # the handed buffer: scale it in place
            np.multiply(product, alpha, out=product)
        else:
            product = np.asarray(product * alpha, dtype=product.dtype)
    return {"Out": product}




def _matmul_v1_grad_kernel(ins, attrs, ctx):
    return _matmul_grads(ins["X"], ins["Y"], ins[OUT_GRAD], attrs["transpose_X"], attrs["transpose_Y"],
                         attrs["alpha"], ctx)


register(
    "matmul",
    inputs=["X", "Y"],
    outputs=["Out"],
    attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
    infer=_infer_matmul("transpose_X", "transpose_Y"),
    kernel=_matmul_v1_kernel,
    grad=Gradient(_matmul_v1_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y"), buffers=True),
    buffers=True,
    doc="Out = alpha * (op(X) @ op(Y)), the shape rules of matmul_v2",
)



# --- fused_gemm_epilogue: Out = op(X) @ op(Y) + Bias (eager F.linear's one op) -------------------
def _gemm_epilogue_infer(ctx):
    _MATMUL_V2_INFER(ctx)
    if ctx.attr("activation") != "none":
        ctx.fail_attr("activation", "'none' (relu/gelu epilogues are not supported yet)", ctx.attr("activation"))
    for slot in ("X", "Y"):
        if len(ctx.shape(slot)) < 2:
            ctx.fail(slot, "rank >= 2", fmt_shape(ctx.shape(slot)))
    if len(ctx.shape("Y")) != 2:
        ctx.fail("Y", "a 2-D weight", fmt_shape(ctx.shape("Y")))
    ctx.check_same_dtype("X", "Bias")
    n = ctx.shape("Y")[0 if ctx.attr("trans_y") else 1]
    bias = list(ctx.shape("Bias"))
    if len(bias) != 1 or -1 not in (n, bias[0]) and bias[0] != n:
        ctx.fail("Bias", f"shape [{n}] (one value per output column)", fmt_shape(ctx.shape("Bias")))


def _gemm_epilogue_kernel(ins, attrs, ctx):
    out = _matmul_product(ins["X"], ins["Y"], attrs["trans_x"], attrs["trans_y"], ctx)
    return {"Out": binary(np.add, out, ins["Bias"], out)}   # elementwise_add's computation, in place


def _gemm_epilogue_grad_kernel(ins, attrs, ctx):
    dout = ins[OUT_GRAD]
    result = _matmul_grads(ins["X"], ins["Y"], dout, attrs["trans_x"], attrs["trans_y"], 1.0, ctx)
    if BIAS_GRAD in ctx.wanted:                      # as elementwise_add's Y@GRAD (axis=-1)
        shape = ins["Bias"].shape
        result[BIAS_GRAD] = unbroadcast(dout, shape, shape)
    return result


register(
    "fused_gemm_epilogue",
    inputs=["X", "Y", "Bias"],
    outputs=["Out"],
    attrs={"trans_x": False, "trans_y": False, "activation": "none"},
    infer=_gemm_epilogue_infer,
    kernel=_gemm_epilogue_kernel,
    grad=Gradient(_gemm_epilogue_grad_kernel, inputs=("X", "Y", "Bias"), input_grads=("X", "Y", "Bias"),
                  no_need_buffer=("Bias",), buffers=True),
    buffers=True,
    doc="Out = op(X) @ op(Y) + Bias (Y 2-D, Bias [N]): matmul_v2 then elementwise_add(axis=-1) in one op, "
        "the same arithmetic; eager F.linear with a bias runs it (activation 'none' only)",
)
