"""Activations: elementwise functions of one tensor X -> Out of X's shape and dtype, and softmax.

Every op here may overwrite its input (``inplace={"Out": "X"}``).  Inputs are float32/float64
(``abs`` and ``square`` also take int32/int64).  Kernels stay in the input's dtype, except that
``gelu`` evaluates in float64 and rounds once.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from .infer_helpers import normalize_axes
from .registry import register
from .special import erfc

FLOATS = (float32, float64)
NUMBERS = (float32, float64, int32, int64)


def _infer_unary(allowed):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        ctx.set("Out", ctx.shape("X"), dtype)
    return infer


def _register_unary(type, fn, doc, attrs=None, allowed=FLOATS):
    register(
        type,
        inputs=["X"],
        outputs=["Out"],
        attrs=attrs or {},
        infer=_infer_unary(allowed),
        kernel=lambda ins, attrs: {"Out": np.asarray(fn(ins["X"], attrs))},
        inplace={"Out": "X"},
        doc=doc,
    )


# --- relu, leaky_relu ----------------------------------------------------------------------------
def _relu(x, attrs):
    return np.maximum(x, x.dtype.type(0))


def _leaky_relu(x, attrs):
    return np.where(x > 0, x, x * x.dtype.type(attrs["alpha"]))


_register_unary("relu", _relu, "Out = max(X, 0)")
_register_unary("leaky_relu", _leaky_relu, "Out = X if X > 0 else alpha * X", attrs={"alpha": 0.02})


# --- sigmoid, tanh -------------------------------------------------------------------------------
def _sigmoid(x, attrs):
    """1 / (1 + exp(-x)) written with exp(-|x|) <= 1, so no exp overflows for large |x|."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))


_register_unary("sigmoid", _sigmoid, "Out = 1 / (1 + exp(-X)) (stable for large |X|)")
_register_unary("tanh", lambda x, attrs: np.tanh(x), "Out = tanh(X)")


# --- gelu ----------------------------------------------------------------------------------------
_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gelu(x, attrs):
    """Exact: x * Phi(x) = 0.5 x erfc(-x / sqrt 2) (erfc keeps the left tail accurate).
    approximate=True: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))."""
    x64 = x.astype(np.float64)
    if attrs["approximate"]:
        inner = _SQRT_2_OVER_PI * x64 * (1.0 + 0.044715 * x64 * x64)
        out = 0.5 * x64 * (1.0 + np.tanh(inner))
    else:
        out = 0.5 * x64 * erfc(-x64 / _SQRT_2)
    return out.astype(x.dtype)


_register_unary("gelu", _gelu, "Out = X * Phi(X) (Phi: standard normal CDF); approximate=True uses tanh",
                attrs={"approximate": False})


# --- log, exp, sqrt, square, abs -----------------------------------------------------------------
_register_unary("log", lambda x, attrs: np.log(x), "Out = ln(X)")
_register_unary("exp", lambda x, attrs: np.exp(x), "Out = e ** X")
_register_unary("sqrt", lambda x, attrs: np.sqrt(x), "Out = sqrt(X)")
_register_unary("square", lambda x, attrs: x * x, "Out = X * X", allowed=NUMBERS)
_register_unary("abs", lambda x, attrs: np.abs(x), "Out = |X|", allowed=NUMBERS)


# --- softmax -------------------------------------------------------------------------------------
def _softmax_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    shape = ctx.shape("X")
    try:
        normalize_axes([ctx.attr("axis")], len(shape), "axis")
    except ValueError:
        ctx.fail_attr("axis", f"an axis in [-{max(len(shape), 1)}, {max(len(shape), 1)}) "
                              f"for X of rank {len(shape)}", ctx.attr("axis"))
    ctx.set("Out", shape, dtype)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) along ``axis``; a 0-D input gives 1.  Shared with loss.py."""
    if x.ndim == 0:
        return np.ones_like(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


register(
    "softmax",
    inputs=["X"],
    outputs=["Out"],
    attrs={"axis": -1},
    infer=_softmax_infer,
    kernel=lambda ins, attrs: {"Out": softmax(ins["X"], attrs["axis"])},
    inplace={"Out": "X"},
    doc="Out = exp(X) / sum(exp(X)) along `axis`, computed as exp(X - max) / sum(exp(X - max))",
)
