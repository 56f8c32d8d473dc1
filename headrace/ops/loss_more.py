"""More loss ops (the reference's op names): ``bce_loss``, ``sigmoid_cross_entropy_with_logits``,
``huber_loss``, ``kldiv_loss``, ``nll_loss``, ``label_smooth``.

Gradients flow to the predictions (``X``; ``huber_loss`` also to ``Y``), never to labels,
targets, weights or prior distributions.  Hard labels (``nll_loss``) are int64 class indices; a
label outside ``[0, C)`` that is not ``ignore_index`` raises ``IndexError`` at run time.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int64
from ..core.errors import fmt_shape
from .gradrule import Gradient, grad_slot
from .loss import check_labels
from .registry import optional, register

FLOATS = (float32, float64)
DX, DY, DOUT = grad_slot("X"), grad_slot("Y"), grad_slot("Out")
REDUCTIONS = ("none", "mean", "sum")


def _same_shape(ctx, a, b):
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) != len(sb) or any(x != y and -1 not in (x, y) for x, y in zip(sa, sb)):
        ctx.fail(b, f"shape {fmt_shape(sa)} (the shape of `{a}`)", fmt_shape(sb))
    ctx.check_same_dtype(a, b)


def _elementwise_infer(out="Out", a="X", b="Label"):
    def infer(ctx):
        ctx.check_dtype(a, FLOATS)
        _same_shape(ctx, a, b)
        ctx.set(out, ctx.shape(a), ctx.dtype(a))
    return infer


# --- bce_loss ------------------------------------------------------------------------------------
def _bce_kernel(ins, attrs, ctx):
    x, label = ins["X"], ins["Label"]
    t = x.dtype.type
    with np.errstate(divide="ignore"):
        log_x = np.maximum(np.log(x), t(-100))            # the reference clamps log at -100
        log_1mx = np.maximum(np.log(t(1) - x), t(-100))
    return {"Out": -(label * log_x + (t(1) - label) * log_1mx)}


def _bce_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, label, dout = ins["X"], ins["Label"], ins[DOUT]
    t = x.dtype.type
    return {DX: dout * (x - label) / np.maximum((t(1) - x) * x, t(1e-12))}


register("bce_loss", inputs=["X", "Label"], outputs=["Out"], infer=_elementwise_infer(), kernel=_bce_kernel,
         grad=Gradient(_bce_grad_kernel, inputs=("X", "Label")),
         doc="Out = -(Label log X + (1 - Label) log(1 - X)), each log clamped at -100; "
             "X@GRAD = Out@GRAD (X - Label) / max(X (1 - X), 1e-12)")


# --- sigmoid_cross_entropy_with_logits -------------------------------------------------------------
def _sce_mask(label, attrs):
    keep = label != label.dtype.type(attrs["ignore_index"])
    count = max(int(np.count_nonzero(keep)), 1) if attrs["normalize"] else 1
    return keep, label.dtype.type(count)


def _sce_kernel(ins, attrs, ctx):
    x, label = ins["X"], ins["Label"]
    t = x.dtype.type
    out = np.maximum(x, t(0)) - x * label + np.log1p(np.exp(-np.abs(x)))
    keep, count = _sce_mask(label, attrs)
    return {"Out": np.where(keep, out, t(0)) / count}


def _sce_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, label, dout = ins["X"], ins["Label"], ins[DOUT]
    t = x.dtype.type
    keep, count = _sce_mask(label, attrs)
    sig = t(1) / (t(1) + np.exp(-x))
    return {DX: np.where(keep, (sig - label) * dout, t(0)) / count}


register("sigmoid_cross_entropy_with_logits", inputs=["X", "Label"], outputs=["Out"],
         attrs={"normalize": False, "ignore_index": -100}, infer=_elementwise_infer(), kernel=_sce_kernel,
         grad=Gradient(_sce_grad_kernel, inputs=("X", "Label")),
         doc="Out = max(X, 0) - X Label + log(1 + exp(-|X|)), 0 where Label == ignore_index; with "
             "normalize, divided by the number of labels that are not ignore_index")


# --- huber_loss ------------------------------------------------------------------------------------
def _huber_infer(ctx):
    if ctx.attr("delta") <= 0:
        ctx.fail_attr("delta", "a value > 0", ctx.attr("delta"))
    ctx.check_dtype("X", FLOATS)
    _same_shape(ctx, "X", "Y")
    ctx.set("Out", ctx.shape("X"), ctx.dtype("X"))
    ctx.set("Residual", ctx.shape("X"), ctx.dtype("X"))


def _huber_kernel(ins, attrs, ctx):
    r = ins["Y"] - ins["X"]
    t = r.dtype.type
    delta, a = t(attrs["delta"]), np.abs(r)
    out = np.where(a <= delta, t(0.5) * r * r, delta * (a - t(0.5) * delta))
    return {"Out": out, "Residual": r}


def _huber_grad_kernel(ins, attrs, ctx):
    r, dout = ins["Residual"], ins[DOUT]
    t = r.dtype.type
    delta = t(attrs["delta"])
    d = dout * np.clip(r, -delta, delta)           # d Out / d r: r inside [-delta, delta], else ±delta
    d += ins[grad_slot("Residual")]                # Residual = Y - X is an output too
    out = {}
    if DY in ctx.wanted:
        out[DY] = d
    if DX in ctx.wanted:
        out[DX] = -d
    return out


register("huber_loss", inputs=["X", "Y"], outputs=["Out", "Residual"], attrs={"delta": 1.0},
         infer=_huber_infer, kernel=_huber_kernel,
         grad=Gradient(_huber_grad_kernel, inputs=(), outputs=("Residual",), output_grads=("Out", "Residual"),
                       input_grads=("X", "Y"),
                       like={DX: "Residual", DY: "Residual"}),
         doc="Residual = Y - X; Out = 0.5 r^2 where |r| <= delta, else delta (|r| - delta / 2)")


# --- kldiv_loss ------------------------------------------------------------------------------------
def _kldiv_infer(ctx):
    if ctx.attr("reduction") not in REDUCTIONS + ("batchmean",):
        ctx.fail_attr("reduction", "'none', 'batchmean', 'mean' or 'sum'", ctx.attr("reduction"))
    ctx.check_dtype("X", FLOATS)
    _same_shape(ctx, "X", "Target")
    ctx.set("Loss", ctx.shape("X") if ctx.attr("reduction") == "none" else (), ctx.dtype("X"))


def _kldiv_scale(x, reduction):
    if reduction == "mean":
        return x.dtype.type(1 / max(x.size, 1))
    if reduction == "batchmean":
        return x.dtype.type(1 / max(x.shape[0] if x.ndim else 1, 1))
    return x.dtype.type(1)


def _kldiv_kernel(ins, attrs, ctx):
    x, target = ins["X"], ins["Target"]
    t = x.dtype.type
    if attrs["log_target"]:
        loss = np.exp(target) * (target - x)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(target > 0, target * (np.log(np.where(target > 0, target, t(1))) - x), t(0))
    if attrs["reduction"] != "none":
        loss = np.asarray(np.sum(loss) * _kldiv_scale(x, attrs["reduction"]), dtype=x.dtype)
    return {"Loss": loss.astype(x.dtype, copy=False)}


def _kldiv_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, target, dloss = ins["X"], ins["Target"], ins[grad_slot("Loss")]
    t = x.dtype.type
    weight = np.exp(target) if attrs["log_target"] else np.where(target > 0, target, t(0))
    return {DX: -weight * dloss * _kldiv_scale(x, attrs["reduction"])}


register("kldiv_loss", inputs=["X", "Target"], outputs=["Loss"], attrs={"reduction": "mean", "log_target": False},
         infer=_kldiv_infer, kernel=_kldiv_kernel,
         grad=Gradient(_kldiv_grad_kernel, inputs=("X", "Target"), output_grads=("Loss",)),
         doc="l = Target (log Target - X) where Target > 0 else 0 (log_target: exp(Target) (Target - X)); "
             "reduction none | sum | mean (over all elements) | batchmean (sum / X.shape[0])")


# --- nll_loss --------------------------------------------------------------------------------------
def _nll_infer(ctx):
    if ctx.attr("reduction") not in REDUCTIONS:
        ctx.fail_attr("reduction", "'none', 'mean' or 'sum'", ctx.attr("reduction"))
    dtype = ctx.check_dtype("X", FLOATS)
    shape = ctx.shape("X")
    if len(shape) < 2:
        ctx.fail("X", "rank >= 2 ([N, C] or [N, C, d1, ...])", fmt_shape(shape))
    ctx.check_dtype("Label", (int64,))
    want = shape[:1] + shape[2:]
    got = ctx.shape("Label")
    if len(got) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(want, got)):
        ctx.fail("Label", f"shape {fmt_shape(want)} (X's shape without the class dim)", fmt_shape(got))
    if ctx.has("Weight"):
        ctx.check_same_dtype("X", "Weight")
        if ctx.shape("Weight") != (shape[1],) and shape[1] != -1:
            ctx.fail("Weight", f"shape [{shape[1]}] (one weight per class)", fmt_shape(ctx.shape("Weight")))
    ctx.set("Out", want if ctx.attr("reduction") == "none" else (), dtype)
    ctx.set("Total_weight", (), dtype)


def _nll_pick(ins, attrs):
    """(per-element weights with 0 where ignored, labels with ignored ones at 0)."""
    x, label = ins["X"], ins["Label"]
    check_labels(label, x.shape[1], attrs["ignore_index"])
    ignored = label == attrs["ignore_index"]
    safe = np.where(ignored, 0, label)
    weight = ins["Weight"][safe] if ins.get("Weight") is not None else np.ones(label.shape, x.dtype)
    return np.where(ignored, x.dtype.type(0), weight).astype(x.dtype, copy=False), safe


def _nll_kernel(ins, attrs, ctx):
    x = ins["X"]
    w, safe = _nll_pick(ins, attrs)
    picked = np.take_along_axis(x, np.expand_dims(safe, 1), axis=1).squeeze(1)
    loss = -w * picked
    total = np.asarray(np.sum(w), dtype=x.dtype)
    if attrs["reduction"] == "sum":
        loss = np.asarray(np.sum(loss), dtype=x.dtype)
    elif attrs["reduction"] == "mean":
        loss = np.asarray(np.sum(loss) / total if total != 0 else 0.0, dtype=x.dtype)
    return {"Out": loss, "Total_weight": total}


def _nll_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    x, dout = ins["X"], ins[DOUT]
    w, safe = _nll_pick(ins, attrs)
    if attrs["reduction"] == "mean":
        total = ins["Total_weight"]
        w = w / total if total != 0 else np.zeros_like(w)
    grad = np.zeros_like(x)
    np.put_along_axis(grad, np.expand_dims(safe, 1), np.expand_dims(-w * dout, 1), axis=1)
    return {DX: grad}


register("nll_loss", inputs=["X", "Label", optional("Weight")], outputs=["Out", "Total_weight"],
         attrs={"ignore_index": -100, "reduction": "mean"}, infer=_nll_infer, kernel=_nll_kernel,
         grad=Gradient(_nll_grad_kernel, inputs=("X", "Label", "Weight"), outputs=("Total_weight",)),
         doc="l = -Weight[Label] X[n, Label, ...] (0 where Label == ignore_index); Total_weight = the sum of "
             "the weights used; reduction none | sum | mean (sum / Total_weight, 0 when that is 0)")


# --- label_smooth ----------------------------------------------------------------------------------
def _label_smooth_infer(ctx):
    eps = ctx.attr("epsilon")
    if not 0.0 <= eps <= 1.0:
        ctx.fail_attr("epsilon", "a value in [0, 1]", eps)
    dtype = ctx.check_dtype("X", FLOATS)
    if ctx.has("PriorDist"):
        ctx.check_same_dtype("X", "PriorDist")
        classes = ctx.shape("X")[-1]
        prior = ctx.shape("PriorDist")
        if prior not in ((classes,), (1, classes)) and classes != -1:
            ctx.fail("PriorDist", f"shape [{classes}] or [1, {classes}] (one value per class)", fmt_shape(prior))
    ctx.set("Out", ctx.shape("X"), dtype)


def _label_smooth_kernel(ins, attrs, ctx):
    x = ins["X"]
    t = x.dtype.type
    eps = t(attrs["epsilon"])
    prior = ins.get("PriorDist")
    if prior is None:
        prior = t(1.0 / x.shape[-1])
    return {"Out": (t(1) - eps) * x + eps * prior.reshape(-1) if not np.isscalar(prior) else
            (t(1) - eps) * x + eps * prior}


def _label_smooth_grad_kernel(ins, attrs, ctx):
    if DX not in ctx.wanted:
        return {}
    dout = ins[DOUT]
    return {DX: dout * dout.dtype.type(1 - attrs["epsilon"])}


register("label_smooth", inputs=["X", optional("PriorDist")], outputs=["Out"], attrs={"epsilon": 0.0},
         infer=_label_smooth_infer, kernel=_label_smooth_kernel,
         grad=Gradient(_label_smooth_grad_kernel, inputs=(), like={DX: DOUT}),
         doc="Out = (1 - epsilon) X + epsilon PriorDist (uniform 1 / C over the last dim without PriorDist)")
