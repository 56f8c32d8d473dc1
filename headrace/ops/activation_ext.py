"""More activations (the ``paddle.nn`` activation layers): elementwise X -> Out ops registered
with ``activation._register_unary`` (so they share its slots, ``inplace`` Out <- X, buffers and
``X@GRAD`` <- ``Out@GRAD``), plus ``log_softmax``, ``prelu`` (a learned slope input) and
``rrelu`` (a random slope while training).

Formulas and attribute names/defaults are the reference's ops (``hard_swish``, ``swish``,
``mish``, ``elu``, ``celu``, ``selu``, ``softplus``, ``softsign``, ``softshrink``,
``hard_shrink``, ``tanh_shrink``, ``thresholded_relu``, ``hard_sigmoid``, ``brelu`` (hardtanh),
``relu6``, ``logsigmoid``).  Every gradient reads ``X`` and is the analytic derivative; at a kink
the derivative of the branch the forward takes for that point is used (e.g. ``relu6``: 0 at
x = 0 and at x = threshold).  Kernels compute the whole result first and then store it (a
handed buffer may be the input itself).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64
from ..core.errors import fmt_shape
from .activation import _infer_unary, _register_unary, sigmoid
from .gradrule import Gradient, grad_slot
from .infer_helpers import normalize_axes
from .kernel import store
from .registry import register
from .softmax import log_softmax_grad_last, log_softmax_last

FLOATS = (float32, float64)
DX, DOUT = grad_slot("X"), grad_slot("Out")


def _t(x, value):
    return x.dtype.type(value)


def _sigmoid(x):
    return sigmoid(np.asarray(x))


def _softplus_plain(x):
    """log(1 + exp(x)) without overflow."""
    return np.logaddexp(x, _t(x, 0))


def _unary(type, forward, derivative, doc, **attrs):
    """Register ``type`` with ``forward(x, attrs)`` and ``derivative(x, attrs)`` (dOut/dX)."""
    def fn(x, a, buf):
        return store(np.asarray(forward(x, a), dtype=x.dtype), buf)

    def dfn(x, dout, a, buf):
        return store(np.asarray(derivative(x, a) * dout, dtype=x.dtype), buf)

    _register_unary(type, fn, doc, grad=("X", dfn), attrs=attrs)


# --- smooth gates --------------------------------------------------------------------------------
def _hard_swish(x, a):
    return x * np.clip(x + _t(x, a["offset"]), 0, a["threshold"]) / _t(x, a["scale"])


def _hard_swish_d(x, a):
    shifted = x + _t(x, a["offset"])
    inner = (2 * x + _t(x, a["offset"])) / _t(x, a["scale"])
    return np.where(shifted <= 0, _t(x, 0), np.where(shifted >= a["threshold"],
                                                      _t(x, a["threshold"] / a["scale"]), inner))


def _beta_x(x, beta):
    """beta * x; x itself for beta 1 (1 * x is x, bit for bit: one pass less)."""
    return x if beta == 1.0 else _t(x, beta) * x


def _one_plus_exp(v, negate):
    """1 + exp(-v) (``negate``) or 1 + exp(v), in one fresh array; inf where exp overflows (see
    ``_far_left``)."""
    d = np.negative(v, out=np.empty_like(v)) if negate else np.array(v, copy=True)   # (arrays for 0-D too)
    np.exp(d, out=d)
    d += d.dtype.type(1)
    return d


def _far_left(values, bx, exact):
    """Where exp(-beta x) overflowed (beta x below -log(max float) + 1: about -87.7 in float32,
    -708.8 in float64) the quotients above are -0 or 0, while the true values are still normal
    floats down to about -91.9 (float32): those entries get ``exact(index)`` instead (a review
    found the band).  One comparison pass to find out (a NaN elsewhere does not hide them)."""
    far = np.asarray(bx < -float(np.log(np.finfo(values.dtype).max)) + 1)
    if far.any():
        values[far] = exact(far)
    return values


def _far_half(b):
    """exp(b / 2) for b far left: a normal float where exp(b) is subnormal (b / 2 is exact, so
    x * h * h rounds like x * exp(b), a few ulps; adding 64 ln 2 instead put its own rounding
    into the exponent: ~40 ulps in float64)."""
    return np.exp(b * b.dtype.type(0.5))


def _swish(x, a):
    """x * sigmoid(beta x) as x / (1 + exp(-beta x)): 4 passes (silu on 4M values at 1 thread:
    12.2 -> ~6 ms), within a few ulps of the product form; far left (``_far_left``) from
    x h h / (1 + h h) with h = exp(beta x / 2), a normal float there.  exp's overflow and
    underflow are the formula's business, not the user's (their flags stay down)."""
    bx = _beta_x(x, a["beta"])
    with np.errstate(over="ignore", under="ignore"):
        d = _one_plus_exp(bx, True)
        out = np.divide(x, d, out=d)
        return _far_left(out, bx, lambda far: (x[far] * (h := _far_half(bx[far]))) * h / (1 + h * h))


def _swish_d(x, a):
    """s + beta x s (1 - s) = s (1 + beta x q) with s = sigmoid(beta x) = 1 / (1 + exp(-beta x))
    and q = 1 - s = 1 / (1 + exp(beta x)), each without cancellation (1 - s from a rounded s
    loses q's digits where s is near 1: 16 ulps at x = 16.6); two scratch arrays; far left
    (``_far_left``) from h = exp(beta x / 2), as the forward."""
    bx = _beta_x(x, a["beta"])
    with np.errstate(over="ignore", under="ignore"):
        s = _one_plus_exp(bx, True)
        np.reciprocal(s, out=s)
        t = _one_plus_exp(bx, False)
        np.reciprocal(t, out=t)
        t *= bx
        t += t.dtype.type(1)
        t *= s
        return _far_left(t, bx, lambda far: (h := _far_half(bx[far])) * (1 + bx[far] / (1 + h * h)) * h
                         / (1 + h * h))


def _mish(x, a):
    sp = np.where(x > a["threshold"], x, _softplus_plain(x))
    return x * np.tanh(sp)


def _mish_d(x, a):
    sp = np.where(x > a["threshold"], x, _softplus_plain(x))
    t = np.tanh(sp)
    dsp = np.where(x > a["threshold"], _t(x, 1), _sigmoid(x))
    return t + x * (1 - t * t) * dsp


_unary("hard_swish", _hard_swish, _hard_swish_d,
       "Out = X * min(max(X + offset, 0), threshold) / scale", threshold=6.0, scale=6.0, offset=3.0)
_unary("swish", _swish, _swish_d,
       "Out = X * sigmoid(beta * X)", beta=1.0)
_unary("mish", _mish, _mish_d, "Out = X * tanh(softplus(X)) (softplus(X) = X above threshold)",
       threshold=20.0)


# --- exponential linear units ----------------------------------------------------------------
def _elu(x, a):
    return np.where(x > 0, x, _t(x, a["alpha"]) * np.expm1(np.minimum(x, 0)))


def _celu(x, a):
    alpha = _t(x, a["alpha"])
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha))


def _selu(x, a):
    return _t(x, a["scale"]) * np.where(x > 0, x, _t(x, a["alpha"]) * np.expm1(np.minimum(x, 0)))


_unary("elu", _elu, lambda x, a: np.where(x > 0, _t(x, 1), _t(x, a["alpha"]) * np.exp(np.minimum(x, 0))),
       "Out = X if X > 0 else alpha * (exp(X) - 1)", alpha=1.0)
_unary("celu", _celu, lambda x, a: np.where(x > 0, _t(x, 1), np.exp(np.minimum(x, 0) / _t(x, a["alpha"]))),
       "Out = max(0, X) + min(0, alpha * (exp(X / alpha) - 1))", alpha=1.0)
_unary("selu", _selu,
       lambda x, a: _t(x, a["scale"]) * np.where(x > 0, _t(x, 1), _t(x, a["alpha"]) * np.exp(np.minimum(x, 0))),
       "Out = scale * (X if X > 0 else alpha * (exp(X) - 1))",
       scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717)


# --- softplus family ---------------------------------------------------------------------------
def _softplus(x, a):
    beta = _t(x, a["beta"])
    return np.where(x * beta > a["threshold"], x, _softplus_plain(beta * x) / beta)


_unary("softplus", _softplus,
       lambda x, a: np.where(x * _t(x, a["beta"]) > a["threshold"], _t(x, 1), _sigmoid(_t(x, a["beta"]) * x)),
       "Out = X if beta * X > threshold else log(1 + exp(beta * X)) / beta", beta=1.0, threshold=20.0)
_unary("softsign", lambda x, a: x / (1 + np.abs(x)), lambda x, a: 1 / np.square(1 + np.abs(x)),
       "Out = X / (1 + |X|)")
_unary("logsigmoid", lambda x, a: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))),
       lambda x, a: _sigmoid(-x), "Out = log(sigmoid(X)) = -softplus(-X)")
_unary("tanh_shrink", lambda x, a: x - np.tanh(x), lambda x, a: np.square(np.tanh(x)), "Out = X - tanh(X)")


# --- shrinks and thresholds ----------------------------------------------------------------------
def _softshrink(x, a):
    lam = _t(x, a["lambda"])
    return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, _t(x, 0)))


def _inside(x, low, high):
    return ((x > low) & (x < high)).astype(x.dtype)


_unary("softshrink", _softshrink, lambda x, a: (np.abs(x) > a["lambda"]).astype(x.dtype),
       "Out = X - lambda if X > lambda, X + lambda if X < -lambda, else 0", **{"lambda": 0.5})
_unary("hard_shrink", lambda x, a: np.where(np.abs(x) > a["threshold"], x, _t(x, 0)),
       lambda x, a: (np.abs(x) > a["threshold"]).astype(x.dtype),
       "Out = X if |X| > threshold else 0", threshold=0.5)
_unary("thresholded_relu", lambda x, a: np.where(x > a["threshold"], x, _t(x, a["value"])),
       lambda x, a: (x > a["threshold"]).astype(x.dtype),
       "Out = X if X > threshold else value", threshold=1.0, value=0.0)
_unary("hard_sigmoid", lambda x, a: np.clip(_t(x, a["slope"]) * x + _t(x, a["offset"]), 0, 1),
       lambda x, a: _t(x, a["slope"]) * _inside(_t(x, a["slope"]) * x + _t(x, a["offset"]), 0, 1),
       "Out = clip(slope * X + offset, 0, 1)", slope=0.2, offset=0.5)
_unary("brelu", lambda x, a: np.clip(x, a["t_min"], a["t_max"]),
       lambda x, a: _inside(x, a["t_min"], a["t_max"]), "Out = clip(X, t_min, t_max) (hardtanh)",
       t_min=0.0, t_max=24.0)
_unary("relu6", lambda x, a: np.clip(x, 0, a["threshold"]), lambda x, a: _inside(x, 0, a["threshold"]),
       "Out = min(max(X, 0), threshold)", threshold=6.0)


# --- log_softmax ---------------------------------------------------------------------------------
def _log_softmax_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    shape = ctx.shape("X")
    try:
        normalize_axes([ctx.attr("axis")], max(len(shape), 1), "axis")
    except ValueError:
        ctx.fail_attr("axis", f"an axis in [-{max(len(shape), 1)}, {max(len(shape), 1)}) for X of rank "
                              f"{len(shape)}", ctx.attr("axis"))
    ctx.set("Out", shape, dtype)


def _log_softmax_kernel(ins, attrs, ctx):
    x = ins["X"]
    if x.ndim == 0:
        return {"Out": np.zeros_like(x)}
    if attrs["axis"] % x.ndim == x.ndim - 1:   # the last axis: row blocks on threads
        return {"Out": log_softmax_last(x)}
    shifted = x - np.max(x, axis=attrs["axis"], keepdims=True)
    return {"Out": shifted - np.log(np.sum(np.exp(shifted), axis=attrs["axis"], keepdims=True))}


def _log_softmax_grad_kernel(ins, attrs, ctx):
    """dX = dOut - softmax * sum(dOut, axis), softmax = exp(Out)."""
    if DX not in ctx.wanted:
        return {}
    out, dout = ins["Out"], ins[DOUT]
    if out.ndim == 0:
        return {DX: np.zeros_like(dout)}
    if attrs["axis"] % out.ndim == out.ndim - 1:
        return {DX: log_softmax_grad_last(out, dout)}
    return {DX: dout - np.exp(out) * np.sum(dout, axis=attrs["axis"], keepdims=True)}


register("log_softmax", inputs=["X"], outputs=["Out"], attrs={"axis": -1}, infer=_log_softmax_infer,
         kernel=_log_softmax_kernel,
         grad=Gradient(_log_softmax_grad_kernel, inputs=(), outputs=("Out",), like={DX: "Out"}),
         doc="Out = X - log(sum(exp(X), axis)) (computed with the max subtracted)")


# --- prelu ---------------------------------------------------------------------------------------
_PRELU_MODES = ("all", "channel", "element")


def _alpha_shape(mode, x_shape, channels_last):
    """The shape Alpha broadcasts as against X (rank of X)."""
    rank = len(x_shape)
    if mode == "all":
        return [1] * rank
    if mode == "channel":
        axis = rank - 1 if channels_last else 1
        return [x_shape[axis] if i == axis else 1 for i in range(rank)]
    return [1] + list(x_shape[1:])


def _prelu_infer(ctx):
    dtype = ctx.check_dtype("X", FLOATS)
    ctx.check_dtype("Alpha", (dtype,))
    mode = ctx.attr("mode")
    if mode not in _PRELU_MODES:
        ctx.fail_attr("mode", f"one of {list(_PRELU_MODES)}", mode)
    shape = ctx.shape("X")
    if len(shape) < (1 if mode == "all" else 2):
        ctx.fail("X", f"rank >= 2 for mode {mode!r}", fmt_shape(shape))
    want = _alpha_shape(mode, shape, ctx.attr("data_format") in ("NHWC", "NLC", "NDHWC"))
    size = int(np.prod([d for d in want if d > 0]))
    alpha = ctx.shape("Alpha")
    known = all(d >= 0 for d in want) and all(d >= 0 for d in alpha)
    if known and int(np.prod(alpha)) != size:
        ctx.fail("Alpha", f"{size} values for mode {mode!r} on X {fmt_shape(shape)}", fmt_shape(alpha))
    ctx.set("Out", shape, dtype)


def _prelu_alpha(ins, attrs):
    x = ins["X"]
    channels_last = attrs["data_format"] in ("NHWC", "NLC", "NDHWC")
    return x, ins["Alpha"].reshape(_alpha_shape(attrs["mode"], x.shape, channels_last))


def _prelu_kernel(ins, attrs, ctx):
    x, alpha = _prelu_alpha(ins, attrs)
    return {"Out": np.where(x > 0, x, alpha * x).astype(x.dtype)}


def _prelu_grad_kernel(ins, attrs, ctx):
    x, alpha = _prelu_alpha(ins, attrs)
    dout = ins[DOUT]
    outs = {}
    if DX in ctx.wanted:
        outs[DX] = np.where(x > 0, dout, alpha * dout).astype(x.dtype)
    if grad_slot("Alpha") in ctx.wanted:
        partial = np.where(x > 0, 0, x * dout)
        axes = tuple(i for i, d in enumerate(alpha.shape) if d == 1 and x.shape[i] != 1)
        d_alpha = np.sum(partial, axis=axes, keepdims=True) if axes else partial
        outs[grad_slot("Alpha")] = d_alpha.reshape(ins["Alpha"].shape).astype(x.dtype)
    return outs


register("prelu", inputs=["X", "Alpha"], outputs=["Out"], attrs={"mode": "all", "data_format": "NCHW"},
         infer=_prelu_infer, kernel=_prelu_kernel,
         grad=Gradient(_prelu_grad_kernel, inputs=("X", "Alpha"), input_grads=("X", "Alpha")),
         doc="Out = X if X > 0 else Alpha * X; Alpha is one value (all), one per channel, or one per "
             "element of a sample (element)")


# --- rrelu ---------------------------------------------------------------------------------------
def _rrelu_infer(ctx):
    _infer_unary(FLOATS)(ctx)
    lower, upper = ctx.attr("lower"), ctx.attr("upper")
    if not 0 <= lower <= upper <= 1:
        ctx.fail_attr("upper", f"0 <= lower <= upper <= 1 (lower is {lower})", upper)
    ctx.set("Noise", ctx.shape("X"), ctx.dtype("X"))


def _rrelu_kernel(ins, attrs, ctx):
    x = ins["X"]
    lower, upper = attrs["lower"], attrs["upper"]
    if attrs["is_test"]:
        slope = np.full(x.shape, (lower + upper) / 2, x.dtype)
    else:
        slope = ctx.rng.uniform(lower, upper, x.shape).astype(x.dtype)
    noise = np.where(x >= 0, _t(x, 1), slope).astype(x.dtype)
    return {"Out": (x * noise).astype(x.dtype), "Noise": noise}


def _rrelu_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    return {DX: (ins[DOUT] * ins["Noise"]).astype(ins[DOUT].dtype)}


register("rrelu", inputs=["X"], outputs=["Out", "Noise"],
         attrs={"lower": 1.0 / 8, "upper": 1.0 / 3, "is_test": False, "seed": 0, "fix_seed": False},
         infer=_rrelu_infer, kernel=_rrelu_kernel, random=True,
         grad=Gradient(_rrelu_grad_kernel, inputs=(), outputs=("Noise",), like={DX: "Noise"}, attrs=False),
         doc="Out = X if X >= 0 else a * X, a ~ U(lower, upper) per element while training, "
             "(lower + upper) / 2 in test mode; Noise holds the slope used (1 where X >= 0)")
