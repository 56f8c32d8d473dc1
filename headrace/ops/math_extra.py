"""More reductions and products: ``reduce_prod``, ``logsumexp``, ``reduce_amax``/``reduce_amin``,
``reduce_all``/``reduce_any``, ``p_norm``, ``dot`` and ``einsum``.

Reductions take ``reduce.py``'s attributes (``dim``, ``keep_dim``, ``reduce_all``).  Gradients:
``reduce_prod``'s is the product of the *other* elements (exclusive products from both sides, so
zeros are handled exactly); ``logsumexp``'s is ``Out@GRAD * exp(X - Out)``; ``reduce_amax``/
``reduce_amin`` split ``Out@GRAD`` evenly among tied extremes (the reference's amax/amin, unlike
``reduce_max`` which gives each tie the full gradient); ``p_norm``'s is
``sign(X) |X|^(p-1) / Out^(p-1)`` (0 where Out is 0; the inf-norms send it to the extremes as
amax does; p = 0 counts nonzeros and has a zero gradient).  ``reduce_all``/``reduce_any`` have
none.  ``einsum`` takes one or two operands without repeated subscripts in one operand and
without ``...``; other equations raise ``NotImplementedError``.  ``polygamma`` (attribute ``n``) is the n-th
derivative of digamma; its gradient is ``polygamma`` of order n + 1.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import bool_
from ..core.errors import fmt_shape
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .infer_helpers import reduce_shape
from .reduce import FLOATS, NUMBERS, _dims, _infer_reduce, _kept_shape
from .registry import REQUIRED, many, register

DX, DY, DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")
_REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False}


def _axes(x, attrs):
    return tuple(reduce_shape(x.shape, _dims(attrs), attrs["keep_dim"], attrs["reduce_all"])[1])


def _reduced(fn):
    def kernel(ins, attrs, ctx):
        x = ins["X"]
        return {"Out": np.asarray(fn(x, _axes(x, attrs), attrs["keep_dim"]))}
    return kernel


def _prod_others(x, axes):
    """For each element, the product of the other elements of its reduced group (zero-safe)."""
    if not axes:
        return np.ones_like(x)
    keep = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, keep + list(axes))
    flat = moved.reshape(moved.shape[:len(keep)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
    left = np.concatenate([ones, np.cumprod(flat, axis=-1)[..., :-1]], axis=-1)
    right = np.flip(np.concatenate([ones, np.cumprod(np.flip(flat, -1), axis=-1)[..., :-1]], axis=-1), -1)
    others = (left * right).reshape(moved.shape)
    return np.transpose(others, np.argsort(keep + list(axes)))


def _prod_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    kept = _kept_shape("reduce_prod_grad", x.shape, dout, attrs)
    return {DX: np.asarray(_prod_others(x, _axes(x, attrs)) * dout.reshape(kept), dtype=x.dtype)}


def _logsumexp(x, axes, keep):
    if x.size == 0 or not axes:
        return np.log(np.sum(np.exp(x), axis=axes, keepdims=keep)) if axes else x.copy()
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keep else np.squeeze(out, axis=axes)


def _logsumexp_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, out, dout = ins["X"], ins["Out"], ins[DOUT]
    kept = _kept_shape("logsumexp_grad", x.shape, dout, attrs)
    return {DX: np.asarray(dout.reshape(kept) * np.exp(x - out.reshape(kept)), dtype=x.dtype)}


def _even_extreme_grad(op_type):
    def kernel(ins, attrs, ctx):
        if DX not in ctx.wanted:
            return {}
        x, out, dout = ins["X"], ins["Out"], ins[DOUT]
        kept = _kept_shape(op_type, x.shape, dout, attrs)
        hit = x == out.reshape(kept)
        count = np.sum(hit, axis=_axes(x, attrs), keepdims=True)
        return {DX: np.asarray(hit * (dout.reshape(kept) / count), dtype=x.dtype)}
    return kernel


# type: (forward(x, axes, keep), gradient kernel or NO_GRADIENT, extra slots read, dtypes, doc)
_REDUCTIONS = {
    "reduce_prod": (lambda x, a, k: np.prod(x, axis=a, keepdims=k), _prod_grad_kernel, (), NUMBERS,
                    "Out = the product of X over `dim`"),
    "logsumexp": (_logsumexp, _logsumexp_grad_kernel, ("Out",), FLOATS,
                  "Out = log(sum(exp(X))) over `dim`, computed without overflow"),
    "reduce_amax": (lambda x, a, k: np.max(x, axis=a, keepdims=k), _even_extreme_grad("reduce_amax_grad"),
                    ("Out",), NUMBERS, "Out = the maximum over `dim`; ties share the gradient evenly"),
    "reduce_amin": (lambda x, a, k: np.min(x, axis=a, keepdims=k), _even_extreme_grad("reduce_amin_grad"),
                    ("Out",), NUMBERS, "Out = the minimum over `dim`; ties share the gradient evenly"),
}

for _type, (_fn, _grad, _extra, _allowed, _doc) in _REDUCTIONS.items():
    register(_type, inputs=["X"], outputs=["Out"], attrs=dict(_REDUCE_ATTRS), infer=_infer_reduce(_allowed),
             kernel=_reduced(_fn), grad=Gradient(_grad, inputs=("X",), outputs=_extra), doc=_doc)


def _infer_bool_reduce(ctx):
    shape = ctx.shape("X")
    out, _ = reduce_shape(shape, _dims(ctx.attrs), ctx.attr("keep_dim"), ctx.attr("reduce_all"))
    ctx.set("Out", out, bool_)


for _type, _fn in (("reduce_all", np.all), ("reduce_any", np.any)):
    register(_type, inputs=["X"], outputs=["Out"], attrs=dict(_REDUCE_ATTRS), infer=_infer_bool_reduce,
             kernel=_reduced(lambda x, a, k, fn=_fn: fn(x, axis=a, keepdims=k)), grad=NO_GRADIENT,
             doc=f"Out = whether {'all' if _fn is np.all else 'any'} elements over `dim` are nonzero (bool)")


# --- p_norm ----------------------------------------------------------------------------------------
def _p_norm_attrs(x, attrs):
    """(axes, keepdims) of a p_norm: all axes when `asvector`, else the one `axis`."""
    if attrs["asvector"] or x.ndim == 0:
        return tuple(range(x.ndim)), attrs["keepdim"]
    return (attrs["axis"] % x.ndim,), attrs["keepdim"]


def _p_norm_kernel(ins, attrs, ctx):
    x, p = ins["X"], float(attrs["porder"])
    axes, keep = _p_norm_attrs(x, attrs)
    a = np.abs(x)
    if p == np.inf:
        out = np.max(a, axis=axes, keepdims=keep)
    elif p == -np.inf:
        out = np.min(a, axis=axes, keepdims=keep)
    elif p == 0:
        out = np.sum(a != 0, axis=axes, keepdims=keep).astype(x.dtype)
    else:
        out = np.sum(a ** p, axis=axes, keepdims=keep) ** (1.0 / p)
    return {"Out": np.asarray(out, dtype=x.dtype)}


def _p_norm_infer(ctx):
    shape = ctx.shape("X")
    ctx.check_dtype("X", FLOATS)
    if ctx.attr("asvector") or not shape:
        out = [1] * len(shape) if ctx.attr("keepdim") else []
    else:
        axis = int(ctx.attr("axis"))
        if not -len(shape) <= axis < len(shape):
            ctx.fail_attr("axis", f"an axis of X {fmt_shape(shape)}", axis)
        axis %= len(shape)
        out = [1 if i == axis else d for i, d in enumerate(shape)] if ctx.attr("keepdim") else \
            [d for i, d in enumerate(shape) if i != axis]
    ctx.set("Out", out, ctx.dtype("X"))


def _p_norm_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, out, dout, p = ins["X"], ins["Out"], ins[DOUT], float(attrs["porder"])
    axes, _ = _p_norm_attrs(x, attrs)
    kept_shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
    o, d = out.reshape(kept_shape), dout.reshape(kept_shape)
    if p == 0:
        return {DX: np.zeros_like(x)}
    if np.isinf(p):
        hit = np.abs(x) == o
        count = np.sum(hit, axis=axes, keepdims=True)
        return {DX: np.asarray(np.sign(x) * hit * d / count, dtype=x.dtype)}
    with np.errstate(divide="ignore", invalid="ignore"):
        dx = np.sign(x) * np.abs(x) ** (p - 1) / o ** (p - 1) * d
    return {DX: np.asarray(np.where(o == 0, 0, dx), dtype=x.dtype)}


register("p_norm", inputs=["X"], outputs=["Out"],
         attrs={"porder": 2.0, "axis": -1, "keepdim": False, "asvector": False, "epsilon": 1e-12},
         infer=_p_norm_infer, kernel=_p_norm_kernel,
         grad=Gradient(_p_norm_grad_kernel, inputs=("X",), outputs=("Out",)),
         doc="Out = (sum |X|^p)^(1/p) along `axis` (over all elements when `asvector`); p = inf/-inf: "
             "max/min |X|; p = 0: the count of nonzeros")


# --- dot -------------------------------------------------------------------------------------------
def _dot_infer(ctx):
    dtype = ctx.check_same_dtype("X", "Y")
    xs, ys = ctx.shape("X"), ctx.shape("Y")
    if len(xs) not in (1, 2) or len(xs) != len(ys) or any(a != b and -1 not in (a, b) for a, b in zip(xs, ys)):
        ctx.fail("Y", f"the shape of X {fmt_shape(xs)} (both 1-D or both 2-D)", fmt_shape(ys))
    ctx.set("Out", xs[:-1], dtype)


def _dot_grad_kernel(ins, attrs, ctx):
    x, y, dout = ins["X"], ins["Y"], ins[DOUT]
    d = dout[..., None]
    result = {}
    if DX in ctx.wanted:
        result[DX] = np.asarray(d * y, dtype=x.dtype)
    if DY in ctx.wanted:
        result[DY] = np.asarray(d * x, dtype=y.dtype)
    return result


register("dot", inputs=["X", "Y"], outputs=["Out"], infer=_dot_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.asarray(np.sum(ins["X"] * ins["Y"], axis=-1))},
         grad=Gradient(_dot_grad_kernel, inputs=("X", "Y"), input_grads=("X", "Y"), attrs=False),
         doc="Out = the inner product of X and Y (1-D: a 0-D result; 2-D: one per row)")


# --- einsum ----------------------------------------------------------------------------------------
def parse_einsum(equation, count):
    """(input subscripts, output subscripts) of an equation with 1 or 2 operands; raises
    NotImplementedError for what this einsum does not support."""
    eq = equation.replace(" ", "")
    if "." in eq:
        raise NotImplementedError(f"einsum: '...' (broadcast dims) is not supported yet: {equation!r}")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise ValueError(f"einsum: the equation {equation!r} has {len(terms)} operand(s), {count} given")
    if count not in (1, 2):
        raise NotImplementedError(f"einsum: {count} operands are not supported yet (one or two): {equation!r}")
    for t in terms:
        if not t.isalpha() or len(set(t)) != len(t):
            raise NotImplementedError(f"einsum: a subscript repeated within one operand (a diagonal) is not "
                                      f"supported yet: {equation!r}")
    if not arrow:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(rhs)) != len(rhs) or any(c not in "".join(terms) for c in rhs):
        raise ValueError(f"einsum: bad output subscripts in {equation!r}")
    return terms, rhs


def _einsum_infer(ctx):
    shapes = ctx.shapes("Operands")
    dtypes = ctx.dtypes("Operands")
    if any(d != dtypes[0] for d in dtypes):
        ctx.fail("Operands", f"operands of one dtype ({dtypes[0]})", str(dtypes))
    try:
        terms, rhs = parse_einsum(ctx.attr("equation"), len(shapes))
    except ValueError as exc:
        ctx.fail_attr("equation", str(exc), ctx.attr("equation"))
    sizes = {}
    for term, shape in zip(terms, shapes):
        if len(term) != len(shape):
            ctx.fail("Operands", f"rank {len(term)} for subscripts {term!r}", fmt_shape(shape))
        for c, d in zip(term, shape):
            if sizes.get(c, -1) not in (-1, d) and d != -1:
                ctx.fail("Operands", f"size {sizes[c]} for subscript {c!r}", fmt_shape(shape))
            sizes[c] = d if sizes.get(c, -1) == -1 else sizes[c]
    ctx.set("Out", [sizes[c] for c in rhs], dtypes[0])


def _einsum_kernel(ins, attrs, ctx):
    terms, rhs = parse_einsum(attrs["equation"], len(ins["Operands"]))
    out = np.einsum(",".join(terms) + "->" + rhs, *ins["Operands"])
    return {"Out": np.array(out, copy=True)}      # one operand may come back as a view


def _einsum_grad_kernel(ins, attrs, ctx):
    """The gradient of operand i: einsum of Out@GRAD with the other operand onto i's subscripts;
    subscripts of i found nowhere else were summed away, so the result is broadcast back."""
    ops, dout = ins["Operands"], ins[DOUT]
    terms, rhs = parse_einsum(attrs["equation"], len(ops))
    grads = []
    for i, (term, x) in enumerate(zip(terms, ops)):
        others = [(t, o) for j, (t, o) in enumerate(zip(terms, ops)) if j != i]
        seen = rhs + "".join(t for t, _ in others)
        kept = "".join(c for c in term if c in seen)
        eq = ",".join([rhs] + [t for t, _ in others]) + "->" + kept
        g = np.einsum(eq, dout, *[o for _, o in others])
        shape = [x.shape[term.index(c)] if c in kept else 1 for c in term]
        g = np.asarray(g).reshape(shape)      # `kept` lists term's subscripts in term's order
        grads.append(np.array(np.broadcast_to(g, x.shape), dtype=x.dtype))
    return {grad_slot("Operands"): grads}


register("einsum", inputs=[many("Operands")], outputs=["Out"], attrs={"equation": REQUIRED},
         infer=_einsum_infer, kernel=_einsum_kernel,
         grad=Gradient(_einsum_grad_kernel, inputs=("Operands",), input_grads=("Operands",)),
         doc="Out = the Einstein summation `equation` of one or two operands")


# --- polygamma -------------------------------------------------------------------------------------
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def polygamma(x, n):
    """psi^(n)(x) for x > 0 (NaN elsewhere), n >= 0, in float64: the recurrence
    psi^(n)(x) = psi^(n)(x+1) - (-1)^n n! / x^(n+1) up to x >= 20, then the asymptotic series."""
    from .math_unary import digamma
    x = np.asarray(x, dtype=np.float64)
    if n == 0:
        return digamma(x)
    ok = x > 0
    z = np.where(ok, x, 1.0)
    fact = math.factorial(n)
    shift = np.zeros_like(z)
    while np.any(z < 20):
        small = z < 20
        shift = shift - np.where(small, (-1) ** n * fact / z ** (n + 1), 0.0)
        z = np.where(small, z + 1, z)
    series = math.factorial(n - 1) / z ** n + fact / (2 * z ** (n + 1))
    for k, b in enumerate(_B2K, start=1):
        series = series + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / z ** (2 * k + n)
    return np.where(ok, (-1) ** (n + 1) * series + shift, np.nan)


def _polygamma_infer(ctx):
    if int(ctx.attr("n")) < 0:
        ctx.fail_attr("n", "a non-negative order", ctx.attr("n"))
    ctx.set("Out", ctx.shape("X"), ctx.check_dtype("X", FLOATS))


def _polygamma_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    return {DX: np.asarray(dout * polygamma(x, int(attrs["n"]) + 1), dtype=x.dtype)}


register("polygamma", inputs=["X"], outputs=["Out"], attrs={"n": REQUIRED}, infer=_polygamma_infer,
         kernel=lambda ins, attrs, ctx: {"Out": np.asarray(polygamma(ins["X"], int(attrs["n"])),
                                                           dtype=ins["X"].dtype)},
         grad=Gradient(_polygamma_grad_kernel, inputs=("X",)),
         doc="Out = the n-th derivative of digamma at X (X > 0; NaN elsewhere for n >= 1)")
