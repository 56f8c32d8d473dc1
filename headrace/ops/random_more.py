"""More random ops, drawing from ``ctx.rng`` as ``creation.py``'s fills do (a nonzero ``seed``
attribute fixes the generator; otherwise the program's or the global one): ``randint``,
``randperm``, ``bernoulli``, ``multinomial``, ``poisson``, ``standard_gamma``, ``binomial``.  None has a
gradient.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import FLOATING, convert_dtype, int64
from ..core.errors import fmt_shape
from .gradrule import NO_GRADIENT
from .registry import REQUIRED, register


def _shape_attr(ctx):
    shape = [int(d) for d in ctx.attr("shape")]
    if any(d < 0 for d in shape):
        ctx.fail_attr("shape", "non-negative dims", shape)
    return shape


def _randint_infer(ctx):
    if not int(ctx.attr("low")) < int(ctx.attr("high")):
        ctx.fail_attr("high", f"a bound greater than low={ctx.attr('low')}", ctx.attr("high"))
    ctx.set("Out", _shape_attr(ctx), ctx.attr("dtype"))


register("randint", inputs=[], outputs=["Out"],
         attrs={"low": 0, "high": REQUIRED, "shape": REQUIRED, "dtype": "int64", "seed": 0},
         infer=_randint_infer, random=True, grad=NO_GRADIENT,
         kernel=lambda ins, attrs, ctx: {"Out": ctx.rng.integers(attrs["low"], attrs["high"], size=attrs["shape"])
                                         .astype(convert_dtype(attrs["dtype"]).numpy)},
         doc="Out ~ uniform integers in [low, high)")


def _randperm_infer(ctx):
    n = int(ctx.attr("n"))
    if n < 0:
        ctx.fail_attr("n", "a non-negative count", n)
    ctx.set("Out", (n,), ctx.attr("dtype"))


register("randperm", inputs=[], outputs=["Out"], attrs={"n": REQUIRED, "dtype": "int64", "seed": 0},
         infer=_randperm_infer, random=True, grad=NO_GRADIENT,
         kernel=lambda ins, attrs, ctx: {"Out": ctx.rng.permutation(int(attrs["n"]))
                                         .astype(convert_dtype(attrs["dtype"]).numpy)},
         doc="Out = a random permutation of 0..n-1")


def _float_like_x(ctx):
    dtype = ctx.dtype("X")
    if dtype not in FLOATING:
        ctx.fail("X", "a floating-point dtype", str(dtype))
    ctx.set("Out", ctx.shape("X"), dtype)


def _bernoulli_kernel(ins, attrs, ctx):
    p = ins["X"]
    if np.any((p < 0) | (p > 1)):
        raise ValueError("op `bernoulli`: probabilities must lie in [0, 1]")
    return {"Out": (ctx.rng.random(p.shape) < p).astype(p.dtype)}


register("bernoulli", inputs=["X"], outputs=["Out"], attrs={"seed": 0}, infer=_float_like_x, random=True,
         kernel=_bernoulli_kernel, grad=NO_GRADIENT, doc="Out ~ Bernoulli(X): 1 with probability X, else 0")


register("poisson", inputs=["X"], outputs=["Out"], attrs={"seed": 0}, infer=_float_like_x, random=True,
         kernel=lambda ins, attrs, ctx: {"Out": ctx.rng.poisson(ins["X"]).astype(ins["X"].dtype)},
         grad=NO_GRADIENT, doc="Out ~ Poisson(X), elementwise rates")


def _multinomial_infer(ctx):
    shape = ctx.shape("X")
    if len(shape) not in (1, 2):
        ctx.fail("X", "a 1-D or 2-D tensor of probabilities", fmt_shape(shape))
    n = int(ctx.attr("num_samples"))
    if n < 1 or (not ctx.attr("replacement") and shape[-1] != -1 and n > shape[-1]):
        ctx.fail_attr("num_samples", f"1..{shape[-1]} without replacement", n)
    ctx.set("Out", shape[:-1] + (n,), int64)


def _multinomial_kernel(ins, attrs, ctx):
    probs = ins["X"].astype(np.float64)
    rows = probs.reshape(-1, probs.shape[-1])
    if np.any(rows < 0) or np.any(rows.sum(axis=1) <= 0):
        raise ValueError("op `multinomial`: weights must be non-negative with a positive sum per row")
    n, out = int(attrs["num_samples"]), []
    for row in rows:
        out.append(ctx.rng.choice(row.size, size=n, replace=bool(attrs["replacement"]), p=row / row.sum()))
    return {"Out": np.asarray(out, dtype=np.int64).reshape(probs.shape[:-1] + (n,))}


register("multinomial", inputs=["X"], outputs=["Out"],
         attrs={"num_samples": 1, "replacement": False, "seed": 0}, infer=_multinomial_infer, random=True,
         kernel=_multinomial_kernel, grad=NO_GRADIENT,
         doc="Out = category indices drawn with the (unnormalised) weights of each row of X")


def _standard_gamma_kernel(ins, attrs, ctx):
    x = ins["X"]
    if np.any(x <= 0):
        raise ValueError("op `standard_gamma`: the shape parameters in X must be positive")
    return {"Out": ctx.rng.standard_gamma(x).astype(x.dtype)}


register("standard_gamma", inputs=["X"], outputs=["Out"], attrs={"seed": 0}, infer=_float_like_x, random=True,
         kernel=_standard_gamma_kernel, grad=NO_GRADIENT, doc="Out ~ Gamma(X, 1), elementwise shapes")


def _binomial_infer(ctx):
    ctx.check_same_dtype("Count", "Prob")
    if ctx.shape("Count") != ctx.shape("Prob"):
        ctx.fail("Prob", f"shape {fmt_shape(ctx.shape('Count'))} (Count's)", fmt_shape(ctx.shape("Prob")))
    ctx.set("Out", ctx.shape("Count"), int64)


def _binomial_kernel(ins, attrs, ctx):
    n, p = ins["Count"], ins["Prob"]
    if np.any((p < 0) | (p > 1)) or np.any(n < 0):
        raise ValueError("op `binomial`: counts must be >= 0 and probabilities in [0, 1]")
    return {"Out": ctx.rng.binomial(n.astype(np.int64), p).astype(np.int64)}


register("binomial", inputs=["Count", "Prob"], outputs=["Out"], attrs={"seed": 0}, infer=_binomial_infer,
         random=True, kernel=_binomial_kernel, grad=NO_GRADIENT,
         doc="Out ~ Binomial(Count, Prob), elementwise (int64)")
