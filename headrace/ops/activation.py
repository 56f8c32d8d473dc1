"""Activations: elementwise functions of one tensor X -> Out of X's shape and dtype (softmax: ops/softmax.py).

Every op here may overwrite its input (``inplace={"Out": "X"}``).  Inputs are float32/float64
(``abs`` and ``square`` also take int32/int64).  Kernels stay in the input's dtype, except that
``gelu`` (forward and gradient) evaluates in float64 and rounds once (float32 input: with
``special.normal_tail``, chunk by chunk in float64 scratch arrays that stay in cache).

Gradients: each op's ``<type>_grad`` follows it and reads ``Out@GRAD`` plus either ``Out``
(relu, sigmoid, tanh, exp, sqrt, softmax: the derivative is a function of the output, so X may
be overwritten by the forward) or ``X`` (leaky_relu, log, square, abs); gelu_grad reads both
(exact float32 takes Phi(X) as Out / X).  ``X@GRAD`` may
overwrite ``Out@GRAD`` (``inplace``), as in the reference.  Derivatives at kinks follow the
reference: relu'(0) = 0 (``Out > 0``), leaky_relu'(0) = alpha (``X > 0``), abs'(0) = sign(0) = 0.

Buffers (``ops/kernel.py``): every kernel here computes into a handed ``out`` buffer of its
output's shape and dtype, the same arithmetic in the same order as without one; with ``inplace``
the buffer may be the input itself (``X`` for the forward, ``Out@GRAD`` for the gradient), so a
kernel reads whatever it needs from that input before it writes.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from .gradrule import Gradient, grad_slot
from .kernel import context, store
from . import parallel
from .parallel import chunked
from .registry import register
from .special import erfc, normal_cdf, normal_tail

FLOATS = (float32, float64)
NUMBERS = (float32, float64, int32, int64)


def _infer_unary(allowed):
    def infer(ctx):
        dtype = ctx.check_dtype("X", allowed)
        ctx.set("Out", ctx.shape("X"), dtype)
    return infer


DX, DOUT = grad_slot("X"), grad_slot("Out")


def _register_unary(type, fn, doc, grad, attrs=None, allowed=FLOATS):
    """Register ``type`` (X -> Out) and, right after, ``<type>_grad``.

    ``fn(x, attrs, buf)`` computes Out (into ``buf`` unless it is None).
    ``grad = (reads, dfn)``: the gradient op reads the forward slot ``reads`` ("X" or "Out") and
    ``Out@GRAD``; ``dfn(value_of_reads, dout, attrs, buf)`` returns ``X@GRAD`` in the input's
    dtype (into ``buf`` unless it is None; ``buf`` may be ``dout`` itself).
    """
    reads, dfn = grad
    register(
        type,
        inputs=["X"],
        outputs=["Out"],
        attrs=attrs or {},
        infer=_infer_unary(allowed),
        kernel=_unary_kernel(fn),
        grad=Gradient(_unary_grad_kernel(type, reads, dfn), inputs=("X",) if reads == "X" else (),
                      outputs=("Out",) if reads == "Out" else (), like={DX: reads},
                      inplace={DX: DOUT}, buffers=True),
        inplace={"Out": "X"},
        buffers=True,
        doc=doc,
    )


def _unary_kernel(fn):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        buf = ctx.buffer("Out", x.shape, x.dtype)
        if parallel.worth(x.size) and (buf is not None or x.flags.c_contiguous):
            return {"Out": _split(lambda piece, out: fn(piece, attrs, out), buf, x)}
        return {"Out": np.asarray(fn(x, attrs, buf))}
    return kernel


def _split(fn, buf, first, *others):
    """``fn(first, *others, out)`` into ``buf`` or a fresh C-contiguous array (the layout ``fn``
    gives for a C-contiguous ``first``), piece by piece on several threads (``ops/parallel.py``)."""
    def piece(*parts):
        value = fn(*parts)
        if value is not parts[-1]:
            np.copyto(parts[-1], value, casting="same_kind")
    return chunked(piece, np.empty(first.shape, first.dtype) if buf is None else buf, first, *others)


def _unary_grad_kernel(type, reads, dfn):
    def kernel(ins, attrs, ctx):
        if DX not in ctx.wanted:
            return {}
        value, dout = ins[reads], ins[DOUT]
        if value.dtype.kind != "f":
            raise TypeError(f"op `{type}_grad`: gradients exist for floating-point inputs only, "
                            f"got `{reads}` of dtype {value.dtype}")
        buf = ctx.buffer(DX, value.shape, value.dtype)
        if parallel.worth(value.size) and (buf is not None or value.flags.c_contiguous and dout.flags.c_contiguous):
            return {DX: _split(lambda v, d, out: dfn(v, d, attrs, out), buf, value, dout)}
        return {DX: np.asarray(dfn(value, dout, attrs, buf))}
    return kernel


# --- relu, leaky_relu ----------------------------------------------------------------------------
def _relu(x, attrs, buf):
    return np.maximum(x, x.dtype.type(0), out=buf)


def _leaky_relu(x, attrs, buf):
    """X where X > 0, else X * alpha (the mask is taken before ``buf``, maybe X, is written)."""
    positive = x > 0
    if buf is None:
        return np.where(positive, x, x * x.dtype.type(attrs["alpha"]))
    if buf is not x:
        np.copyto(buf, x)
    np.multiply(x, x.dtype.type(attrs["alpha"]), out=buf, where=~positive)
    return buf


def _relu_grad(out, dout, attrs, buf):
    return np.multiply(dout, out > 0, out=buf)


def _leaky_relu_grad(x, dout, attrs, buf):
    alpha = x.dtype.type(attrs["alpha"])
    positive = x > 0
    if buf is None:
        dx = np.asarray(dout * alpha)  # a 0-D product is a scalar: make it writable
        np.copyto(dx, dout, where=positive)
        return dx
    np.multiply(dout, alpha, out=buf, where=~positive)  # buf may be dOut: keep it where X > 0
    if buf is not dout:
        np.copyto(buf, dout, where=positive)
    return buf


_register_unary("relu", _relu, "Out = max(X, 0)", grad=("Out", _relu_grad))
_register_unary("leaky_relu", _leaky_relu, "Out = X if X > 0 else alpha * X",
                grad=("X", _leaky_relu_grad), attrs={"alpha": 0.02})


# --- sigmoid, tanh -------------------------------------------------------------------------------
def sigmoid(x, out=None):
    """1 / (1 + exp(-x)) as exp(min(x, 0)) / (1 + exp(-|x|)): no exp overflows for large |x|,
    and no select: for x >= 0 it is 1 / (1 + e), for x < 0 e / (1 + e) with e = exp(-|x|), the
    two branches' values bit for bit (np.where over a data-dependent mask runs ~5 ns an element,
    mispredicted branches: 8 SIMD passes are ~5x faster).  ``out`` may be ``x`` itself."""
    if x.ndim == 0:   # (NumPy gives scalars, not arrays, for 0-D results)
        value = sigmoid(x.reshape(1)).reshape(())
        return value if out is None else store(value, out)
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += x.dtype.type(1)
    numerator = np.minimum(x, x.dtype.type(0), out=out)
    np.exp(numerator, out=numerator)
    return np.divide(numerator, e, out=numerator)


def _sigmoid(x, attrs, buf):
    return sigmoid(x, buf)


def _sigmoid_grad(out, dout, attrs, buf):
    t = np.asarray(1 - out)   # (1 - Out) * Out * dOut; buf may be dOut: multiply it last
    t *= out
    return np.multiply(t, dout, out=buf)


def _tanh_grad(out, dout, attrs, buf):
    t = np.asarray(out * out)  # (1 - Out**2) * dOut (asarray: 0-D gives a scalar)
    np.subtract(1, t, out=t)
    return np.multiply(t, dout, out=buf)


_register_unary("sigmoid", _sigmoid, "Out = 1 / (1 + exp(-X)) (stable for large |X|)",
                grad=("Out", _sigmoid_grad))
_register_unary("tanh", lambda x, attrs, buf: np.tanh(x, out=buf), "Out = tanh(X)", grad=("Out", _tanh_grad))


# --- gelu ----------------------------------------------------------------------------------------
_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_ONE_OVER_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)


# Elements per float64 chunk: the forward's three scratch arrays (1.5 MiB; the gradient's two and
# its float32 pieces) stay in L2 (2 MiB a core).  At one thread 32K-64K cost the same; with two, a
# NumPy call must run long enough for the other thread to take the GIL meanwhile (2 threads over
# 1, measured: 0.95x at 16K, 1.3x at 32K, 1.6x at 64K; BENCHMARKS.md, sixth session: gelu).
_CHUNK = 1 << 16


def _float64_chunks(fn, scratch, out, *arrays):
    """``fn(*array_pieces, out_piece, *scratch_pieces)`` over ``_CHUNK``-element pieces of the
    flat arrays, with ``scratch`` float64 arrays allocated once (``out`` may be one of ``arrays``:
    ``fn`` reads each piece before it writes it)."""
    flat_out, flats = out.reshape(-1), [a.reshape(-1) for a in arrays]
    size = flat_out.size
    work = [np.empty(min(_CHUNK, size)) for _ in range(scratch)]
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        for start in range(0, size, _CHUNK):
            stop = min(start + _CHUNK, size)
            fn(*[f[start:stop] for f in flats], flat_out[start:stop], *[w[:stop - start] for w in work])
    return out


def _gelu32(x, out, a, u, p):
    """out = x Phi(x) = relu(x) - |x| Phi(-|x|) for float32 x, in float64 (scratch a, u, p) and
    rounded once; Phi(-|x|) has no 1 - erf cancellation (``special.normal_tail``)."""
    np.abs(x, out=a)
    a *= _SQRT_HALF
    normal_tail(a, u, p, times_abs=True)      # |x| Phi(-|x|)
    if not x.max() < np.inf:                  # +inf (or nan): |x| Phi(-|x|) = inf * 0 -> 0
        p[x == np.inf] = 0.0
    np.maximum(x, 0.0, out=u)                 # relu(x), the last read of x (out may be x)
    u -= p
    np.copyto(out, u, casting="same_kind")    # (float64 passes and a copy beat one mixed-type pass)


_FLOAT32_TINY = float(np.finfo(np.float32).tiny)
_NORMAL_OUT = (-13.0, 2.0 ** -248)   # x >= -13 and x**2 >= 2**-248: |x Phi(x)| >= 2**-126 = tiny


def _gelu32_grad_from_out(x, out, dout, dx, x64, d):
    """dx = (Phi(x) + x phi(x)) dOut with Phi(x) = Out / x: Out is x Phi(x) rounded once to
    float32, so the quotient is Phi to float32 accuracy wherever Out is a normal float32;
    elsewhere (x = 0, tiny |x|, the far left tail) Phi is computed again.  Scratch: x64, d."""
    np.copyto(x64, x)
    np.square(x64, out=d)                      # x**2, exact
    normal = x.min() >= _NORMAL_OUT[0] and d.min() >= _NORMAL_OUT[1]   # (False for a nan)
    d *= -0.5
    np.exp(d, out=d)
    d *= x64
    d *= _ONE_OVER_SQRT_2PI                   # x phi(x)
    cdf = np.divide(out, x64, out=x64)
    if not normal:
        again = np.abs(out) < _FLOAT32_TINY
        cdf[again] = normal_cdf(x[again].astype(np.float64))
    d += cdf
    np.copyto(x64, dout)
    d *= x64
    np.copyto(dx, d, casting="same_kind")


def _gelu(x, attrs, buf):
    """Exact: x * Phi(x) = 0.5 x erfc(-x / sqrt 2) (erfc keeps the left tail accurate).
    approximate=True: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))."""
    if x.dtype == np.float32 and not attrs["approximate"]:
        return _float64_chunks(_gelu32, 3, np.empty(x.shape, x.dtype) if buf is None else buf, x)
    x64 = x.astype(np.float64)
    if attrs["approximate"]:
        inner = _SQRT_2_OVER_PI * x64 * (1.0 + 0.044715 * x64 * x64)
        out = 0.5 * x64 * (1.0 + np.tanh(inner))
    else:
        out = 0.5 * x64 * erfc(-x64 / _SQRT_2)
    return out.astype(x.dtype) if buf is None else store(out, buf)


def _gelu_grad(x, dout, attrs, buf):
    """Exact: d/dx x Phi(x) = Phi(x) + x phi(x).  approximate=True, with t = tanh(u),
    u = sqrt(2/pi) (x + 0.044715 x**3): 0.5 (1 + t) + 0.5 x (1 - t**2) sqrt(2/pi) (1 + 3 * 0.044715 x**2)."""
    x64 = x.astype(np.float64, copy=False)
    if attrs["approximate"]:
        sq = x64 * x64
        t = np.tanh(_SQRT_2_OVER_PI * x64 * (1.0 + 0.044715 * sq))
        sq *= 3 * 0.044715
        sq += 1.0
        sq *= _SQRT_2_OVER_PI          # du/dx
        d = 1.0 - t * t
        d *= sq
        d *= x64
        d += 1.0
        d += t
        d *= 0.5
    else:
        d = np.exp(-0.5 * x64 * x64)
        d *= _ONE_OVER_SQRT_2PI        # phi(x)
        d *= x64
        d += 0.5 * erfc(-x64 / _SQRT_2)  # + Phi(x)
    d *= dout
    return d.astype(x.dtype, copy=False) if buf is None else store(d, buf)


def _gelu_grad_kernel(ins, attrs, ctx):
    """gelu_grad reads X, Out and Out@GRAD: exact float32 takes Phi(X) = Out / X from the forward
    (``_gelu32_grad_from_out``), the rest computes from X (``_gelu_grad``)."""
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    buf = ctx.buffer(DX, x.shape, x.dtype)
    if x.dtype == np.float32 and not attrs["approximate"]:
        forward = ins.get("Out")
        if forward is None:   # a program built without it (optional slot): the forward again, same bits
            forward = _unary_kernel(_gelu)({"X": x}, attrs, context())["Out"]
        out = np.empty(x.shape, x.dtype) if buf is None else buf   # pieces on several threads:
        return {DX: chunked(lambda *parts: _float64_chunks(_gelu32_grad_from_out, 2, parts[-1], *parts[:-1]),
                            out, x, forward, dout)}
    return {DX: np.asarray(_gelu_grad(x, dout, attrs, buf))}


register("gelu", inputs=["X"], outputs=["Out"], attrs={"approximate": False}, infer=_infer_unary(FLOATS),
         kernel=_unary_kernel(_gelu), inplace={"Out": "X"}, buffers=True,
         grad=Gradient(_gelu_grad_kernel, inputs=("X",), outputs=("Out",), optional=("Out",), like={DX: "X"},
                       inplace={DX: DOUT}, buffers=True),
         doc="Out = X * Phi(X) (Phi: standard normal CDF); approximate=True uses tanh")


# --- log, exp, sqrt, square, abs -----------------------------------------------------------------
def _sqrt_grad(out, dout, attrs, buf):
    dx = np.asarray(np.divide(dout, out, out=buf))  # dOut * 0.5 / Out
    dx *= 0.5
    return dx


def _square_grad(x, dout, attrs, buf):
    dx = np.asarray(np.multiply(dout, x, out=buf))  # dOut * 2 X
    dx *= 2
    return dx


def _abs_grad(x, dout, attrs, buf):
    return np.multiply(np.sign(x), dout, out=buf)  # sign(0) = 0


_register_unary("log", lambda x, attrs, buf: np.log(x, out=buf), "Out = ln(X)",
                grad=("X", lambda x, dout, attrs, buf: np.divide(dout, x, out=buf)))
_register_unary("exp", lambda x, attrs, buf: np.exp(x, out=buf), "Out = e ** X",
                grad=("Out", lambda out, dout, attrs, buf: np.multiply(dout, out, out=buf)))
_register_unary("sqrt", lambda x, attrs, buf: np.sqrt(x, out=buf), "Out = sqrt(X)", grad=("Out", _sqrt_grad))
_register_unary("square", lambda x, attrs, buf: np.multiply(x, x, out=buf), "Out = X * X",
                grad=("X", _square_grad), allowed=NUMBERS)
_register_unary("abs", lambda x, attrs, buf: np.abs(x, out=buf), "Out = |X|", grad=("X", _abs_grad),
                allowed=NUMBERS)
