"""Loss functions of ``paddle.nn.functional`` (both modes: every function emits ops through
``apply_op``), with the reference's argument names, defaults and reductions.

Built on the loss ops (``bce_loss``, ``sigmoid_cross_entropy_with_logits``, ``huber_loss``,
``kldiv_loss``, ``nll_loss``, ``label_smooth``, ``softmax_with_cross_entropy``) and elementwise
ops; a label compared with a value (``label == 1``) becomes a 0/1 mask by ``equal`` + ``cast``.
One-hot labels are ``equal(label, arange(C))`` broadcast along the class axis.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.errors import AttrError, ShapeError, located, fmt_shape
from ..ops.apply import apply_op, apply_op_single
from .tensor import _key, cast, mean, reshape, sum as reduce_sum, unsqueeze

REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction, fn, allowed=REDUCTIONS):
    if reduction not in allowed:
        raise located(AttrError, f"{fn}(): reduction must be one of {', '.join(repr(r) for r in allowed)}, "
                         f"got {reduction!r}")


def _reduce(loss, reduction, name=None):
    if reduction == "sum":
        return reduce_sum(loss, name=name)
    if reduction == "mean":
        return mean(loss, name=name)
    return loss


def _op(op_type, inputs, attrs=None, name=None, out_slot="Out"):
    return apply_op_single(op_type, inputs, attrs, out_slot=out_slot, name_key=_key(op_type, name))


def _unary(op_type, x):
    return _op(op_type, {"X": x})


def _mask(x, value, dtype):
    """1.0 where ``x == value``, else 0.0, in ``dtype``."""
    target = apply_op_single("fill_constant", attrs={"shape": [], "dtype": str(x.dtype), "value": float(value)})
    return cast(_op("equal", {"X": x, "Y": target}), dtype)


def _const(value, dtype):
    return apply_op_single("fill_constant", attrs={"shape": [], "dtype": str(dtype), "value": float(value)})


def _arange(classes, rank, axis):
    """int64 ``[0, C)`` shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    values = np.arange(classes, dtype=np.int64).reshape([classes] + [1] * (rank - 1 - axis))
    return apply_op_single("assign_value", attrs={"shape": list(values.shape), "dtype": "int64",
                                                  "values": values.ravel().tolist()})


def one_hot_along(label, classes, axis, dtype):
    """``label`` (int64, size 1 along ``axis``) as one-hot rows along ``axis`` in ``dtype``; labels
    outside ``[0, C)`` (e.g. ignore_index) give all-zero rows."""
    rank = len(label.shape)
    if str(label.dtype) != "int64":
        label = cast(label, "int64")
    return cast(_op("equal", {"X": label, "Y": _arange(classes, rank, axis % rank)}), dtype)


def _norm(x, p, axis, keepdim=False):
    """The p-norm of ``x`` along ``axis`` (p = 1, 2, inf or any other positive number)."""
    a = _unary("abs", x)
    if p == 2:
        return _unary("sqrt", reduce_sum(_unary("square", x), axis=axis, keepdim=keepdim))
    if p == 1:
        return reduce_sum(a, axis=axis, keepdim=keepdim)
    if p == math.inf:
        return _op("reduce_max", {"X": a}, {"dim": [axis], "keep_dim": keepdim})
    powered = _op("elementwise_pow", {"X": a, "Y": _const(p, x.dtype)})
    return _op("elementwise_pow", {"X": reduce_sum(powered, axis=axis, keepdim=keepdim), "Y": _const(1.0 / p, x.dtype)})


# --- regression losses ------------------------------------------------------------------------------
def mse_loss(input, label, reduction="mean", name=None):
    """``(input - label)^2``, reduced."""
    _check_reduction(reduction, "mse_loss")
    return _reduce(_unary("square", input - label), reduction, name)


def l1_loss(input, label, reduction="mean", name=None):
    """``|input - label|``, reduced."""
    _check_reduction(reduction, "l1_loss")
    return _reduce(_unary("abs", input - label), reduction, name)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):
    """Huber loss: ``0.5 r^2`` where ``|r| < delta``, else ``delta (|r| - delta / 2)`` (op ``huber_loss``)."""
    _check_reduction(reduction, "smooth_l1_loss")
    out = apply_op("huber_loss", {"X": input, "Y": label}, {"delta": float(delta)},
                   name_key=_key("huber_loss", name))["Out"][0]
    return _reduce(out, reduction, name)


def square_error_cost(input, label):
    """Elementwise ``(input - label) ** 2`` (fluid 1.x)."""
    return _unary("square", input - label)


def log_loss(input, label, epsilon=1e-4, name=None):
    """fluid 1.x: ``-label log(input + eps) - (1 - label) log(1 - input + eps)``."""
    return -(label * _unary("log", input + epsilon)) - (1.0 - label) * _unary("log", 1.0 - input + epsilon)


# --- binary classification --------------------------------------------------------------------------
def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """BCE of probabilities ``input`` (op ``bce_loss``; logs clamped at -100), times ``weight``."""
    _check_reduction(reduction, "binary_cross_entropy")
    out = _op("bce_loss", {"X": input, "Label": label}, name=name)
    if weight is not None:
        out = out * weight
    return _reduce(out, reduction, name)


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, name=None, normalize=False):
    """``max(x, 0) - x label + log(1 + exp(-|x|))``; 0 where ``label == ignore_index``."""
    return _op("sigmoid_cross_entropy_with_logits", {"X": x, "Label": label},
               {"ignore_index": int(ignore_index), "normalize": bool(normalize)}, name=name)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, name=None):
    """Sigmoid + BCE of ``logit``; ``pos_weight`` multiplies the loss by ``label (pos_weight - 1) + 1``
    and ``weight`` by itself, as the reference does."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    out = sigmoid_cross_entropy_with_logits(logit, label, name=name)
    if pos_weight is not None:
        out = out * (label * (pos_weight - 1.0) + 1.0)
    if weight is not None:
        out = out * weight
    return _reduce(out, reduction, name)


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None):
    """``alpha_t (1 - p_t)^gamma BCE(logit, label)`` / ``normalizer``, with ``p = sigmoid(logit)``,
    ``p_t = p label + (1 - p)(1 - label)``, ``alpha_t = alpha label + (1 - alpha)(1 - label)``."""
    _check_reduction(reduction, "sigmoid_focal_loss")
    p = _unary("sigmoid", logit)
    ce = sigmoid_cross_entropy_with_logits(logit, label)
    p_t = p * label + (1.0 - p) * (1.0 - label)
    loss = ce * _op("elementwise_pow", {"X": 1.0 - p_t, "Y": _const(gamma, logit.dtype)})
    if alpha >= 0:
        loss = (label * alpha + (1.0 - label) * (1.0 - alpha)) * loss
    if normalizer is not None:
        loss = loss / normalizer
    return _reduce(loss, reduction, name)


# --- distributions ----------------------------------------------------------------------------------
def kl_div(input, label, reduction="mean", log_target=False, name=None):
    """``label (log label - input)`` (``input`` holds log-probabilities; ``log_target``: ``label`` too);
    reduction 'none' | 'batchmean' | 'mean' | 'sum' (op ``kldiv_loss``)."""
    _check_reduction(reduction, "kl_div", REDUCTIONS + ("batchmean",))
    return _op("kldiv_loss", {"X": input, "Target": label}, {"reduction": reduction, "log_target": bool(log_target)},
               name=name, out_slot="Loss")


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """Negative log-likelihood of log-probabilities ``input`` [N, C, ...] at int64 ``label`` [N, ...]
    (op ``nll_loss``; 'mean' divides by the summed weights of the labels used)."""
    _check_reduction(reduction, "nll_loss")
    inputs = {"X": input, "Label": label}
    if weight is not None:
        inputs["Weight"] = weight
    return _op("nll_loss", inputs, {"ignore_index": int(ignore_index), "reduction": reduction}, name=name)


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """``(1 - epsilon) label + epsilon prior_dist`` (uniform ``1 / C`` by default)."""
    inputs = {"X": label}
    if prior_dist is not None:
        inputs["PriorDist"] = prior_dist
    return _op("label_smooth", inputs, {"epsilon": float(epsilon)}, name=name)


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-8, reduction="mean", name=None):
    """``exp(input) - label input`` (``log_input``) or ``input - label log(input + eps)``; ``full`` adds
    Stirling's term ``label log label - label + log(2 pi label) / 2`` where ``label > 1``."""
    _check_reduction(reduction, "poisson_nll_loss")
    if log_input:
        loss = _unary("exp", input) - label * input
    else:
        loss = input - label * _unary("log", input + epsilon)
    if full:
        big = cast(_op("greater_than", {"X": label, "Y": _const(1.0, label.dtype)}), label.dtype)
        safe = label * big + (1.0 - big)             # log(1) = 0 where the term is masked
        stirling = label * _unary("log", safe) - label + _unary("log", safe * (2 * math.pi)) * 0.5
        loss = loss + stirling * big
    return _reduce(loss, reduction, name)


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean", name=None):
    """``(log(max(var, eps)) + (input - label)^2 / max(var, eps)) / 2`` (+ ``log(2 pi) / 2`` with ``full``)."""
    _check_reduction(reduction, "gaussian_nll_loss")
    var = _op("clip", {"X": variance}, {"min": float(epsilon), "max": 3.4e38})
    loss = (_unary("log", var) + _unary("square", input - label) / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, name)


# --- ranking and embedding losses -------------------------------------------------------------------
def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):
    """``max(0, -label (input - other) + margin)``."""
    _check_reduction(reduction, "margin_ranking_loss")
    return _reduce(_unary("relu", -label * (input - other) + margin), reduction, name)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):
    """``input`` where ``label == 1``, ``max(0, margin - input)`` where ``label == -1``."""
    _check_reduction(reduction, "hinge_embedding_loss")
    loss = _mask(label, 1.0, input.dtype) * input + \
        _mask(label, -1.0, input.dtype) * _unary("relu", margin - input)
    return _reduce(loss, reduction, name)


def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None):
    """``1 - cos(x1, x2)`` where ``label == 1``, ``max(0, cos - margin)`` where ``label == -1``
    (cosine along the last axis, squared magnitudes plus 1e-11)."""
    _check_reduction(reduction, "cosine_embedding_loss")
    prod = reduce_sum(input1 * input2, axis=-1)
    mag1 = reduce_sum(_unary("square", input1), axis=-1) + 10e-12
    mag2 = reduce_sum(_unary("square", input2), axis=-1) + 10e-12
    cos = prod / _unary("sqrt", mag1 * mag2)
    label = cast(label, input1.dtype)
    loss = _mask(label, 1.0, cos.dtype) * (1.0 - cos) + _mask(label, -1.0, cos.dtype) * _unary("relu", cos - margin)
    return _reduce(loss, reduction, name)


def soft_margin_loss(input, label, reduction="mean", name=None):
    """``log(1 + exp(-label input))``."""
    _check_reduction(reduction, "soft_margin_loss")
    z = -(cast(label, input.dtype) * input)
    zeros = z * 0.0
    return _reduce(sigmoid_cross_entropy_with_logits(z, zeros), reduction, name)


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):
    """``-(label log sigmoid(x) + (1 - label) log sigmoid(-x))`` (times ``weight``), averaged over
    the classes (last axis), then reduced over the batch."""
    _check_reduction(reduction, "multi_label_soft_margin_loss")
    loss = sigmoid_cross_entropy_with_logits(input, cast(label, input.dtype))
    if weight is not None:
        loss = loss * weight
    return _reduce(mean(loss, axis=-1), reduction, name)


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False, reduction="mean",
                        name=None):
    """``max(0, d(input, positive) - d(input, negative) + margin)``, ``d(a, b) = ||a - b + eps||_p``
    over the last axis; ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    _check_reduction(reduction, "triplet_margin_loss")
    pos = _norm(input - positive + epsilon, p, -1)
    neg = _norm(input - negative + epsilon, p, -1)
    if swap:
        neg = _op("elementwise_min", {"X": neg, "Y": _norm(positive - negative + epsilon, p, -1)})
    return _reduce(_unary("relu", pos - neg + margin), reduction, name)


def dice_loss(input, label, epsilon=1e-5, name=None):
    """fluid 1.x: ``1 - 2 |X ∩ Y| / (|X| + |Y| + eps)`` per sample (probabilities ``input`` [N, ..., C],
    int64 ``label`` [N, ..., 1]), averaged over the batch."""
    rank = len(input.shape)
    if len(label.shape) != rank or label.shape[-1] != 1:
        raise located(ShapeError, f"dice_loss(): label must be [N, ..., 1] for input {fmt_shape(input.shape)}, "
                         f"got {fmt_shape(label.shape)}")
    onehot = one_hot_along(label, input.shape[-1], -1, input.dtype)
    dims = list(range(1, rank))
    inse = reduce_sum(input * onehot, axis=dims)
    denom = reduce_sum(input, axis=dims) + reduce_sum(onehot, axis=dims)
    return mean(1.0 - inse * 2.0 / (denom + epsilon))


# --- similarity -------------------------------------------------------------------------------------
def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """``x / max(||x||_p, epsilon)`` along ``axis``."""
    if not isinstance(p, numbers.Real) or p <= 0:
        raise located(AttrError, f"normalize(): p must be a positive number, got {p!r}")
    norm = _norm(x, p, axis, keepdim=True)
    return x / _op("elementwise_max", {"X": norm, "Y": _const(epsilon, x.dtype)})


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """``sum(x1 x2) / sqrt(max(sum(x1^2) sum(x2^2), eps^2))`` along ``axis``."""
    w12 = reduce_sum(x1 * x2, axis=axis)
    w1 = reduce_sum(_unary("square", x1), axis=axis)
    w2 = reduce_sum(_unary("square", x2), axis=axis)
    n12 = _unary("sqrt", _op("elementwise_max", {"X": w1 * w2, "Y": _const(eps * eps, x1.dtype)}))
    return w12 / n12


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """``||x - y + epsilon||_p`` over the last axis."""
    return _norm(x - y + epsilon, p, -1, keepdim=keepdim)



def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):
    """``sum_{j != y} max(0, w[y] (margin - x[y] + x[j]))^p / C`` per sample (``w`` = ``weight`` or 1)."""
    _check_reduction(reduction, "multi_margin_loss")
    if len(input.shape) != 2:
        raise located(ShapeError, f"multi_margin_loss(): input must be [N, C], got {fmt_shape(input.shape)}")
    classes = input.shape[1]
    onehot = one_hot_along(unsqueeze(label, [1]) if len(label.shape) == 1 else label, classes, 1, input.dtype)
    picked = reduce_sum(input * onehot, axis=1, keepdim=True)
    diff = input - picked + margin
    if weight is not None:
        diff = diff * reduce_sum(onehot * weight, axis=1, keepdim=True)
    hinge = _unary("relu", diff)
    if p != 1:
        hinge = _op("elementwise_pow", {"X": hinge, "Y": _const(p, input.dtype)})
    loss = reduce_sum(hinge * (1.0 - onehot), axis=1) * (1.0 / classes)
    return _reduce(loss, reduction, name)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean", name=None):
    """``max(0, d(input, positive) - d(input, negative) + margin)`` with ``d = distance_function``
    (default: ``pairwise_distance``, p = 2); ``swap`` takes ``min(d(a, n), d(p, n))``."""
    _check_reduction(reduction, "triplet_margin_with_distance_loss")
    distance = distance_function if distance_function is not None else pairwise_distance
    pos, neg = distance(input, positive), distance(input, negative)
    if swap:
        neg = _op("elementwise_min", {"X": neg, "Y": distance(positive, negative)})
    return _reduce(_unary("relu", pos - neg + margin), reduction, name)


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss: soft-label cross entropy of ``anchor @ positive^T`` against the rows of
    "same label" normalized to sum 1, plus ``l2_reg / 4`` times the mean squared norms."""
    batch = labels.shape[0]
    labels = reshape(labels, [batch, 1])
    same = cast(_op("equal", {"X": labels, "Y": reshape(labels, [1, batch])}), anchor.dtype)
    targets = same / reduce_sum(same, axis=1, keepdim=True)
    l2 = mean(reduce_sum(_unary("square", anchor), axis=1)) + mean(reduce_sum(_unary("square", positive), axis=1))
    logits = _op("matmul_v2", {"X": anchor, "Y": positive}, {"trans_y": True})
    ce = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": targets}, {"soft_label": True},
                  name_key=_key("npair_loss"))["Loss"][0]
    return l2 * (0.25 * l2_reg) + mean(reduce_sum(targets * ce, axis=0))


def multi_label_margin_loss(input, label, reduction="mean", name=None):
    """``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[j] - x[i])) / C`` per sample; the
    targets are the labels before the first negative one (``label`` [N, C], padded with -1)."""
    _check_reduction(reduction, "multi_label_margin_loss")
    if len(input.shape) != 2 or list(label.shape) != list(input.shape):
        raise located(ShapeError, f"multi_label_margin_loss(): input must be [N, C] and label the same shape, got "
                         f"{fmt_shape(input.shape)} and {fmt_shape(label.shape)}")
    classes, dtype = input.shape[1], input.dtype
    negative = cast(_op("less_than", {"X": label, "Y": _const(0, label.dtype)}), dtype)
    upper = np.triu(np.ones((classes, classes)))          # upper[i, k] = 1 for i <= k
    upper = apply_op_single("assign_value", attrs={"shape": [classes, classes], "dtype": str(dtype),
                                                   "values": upper.ravel().tolist()})
    before = _op("matmul_v2", {"X": negative, "Y": upper})   # negatives at or before each position
    valid = cast(_op("equal", {"X": before, "Y": _const(0, dtype)}), dtype)
    onehot = one_hot_along(unsqueeze(label, [2]), classes, 2, dtype)     # [N, position, class]
    counts = reduce_sum(onehot * unsqueeze(valid, [2]), axis=1)           # times each class is a target
    is_target = _op("elementwise_min", {"X": counts, "Y": _const(1, dtype)})
    margins = _unary("relu", 1.0 - (unsqueeze(input, [2]) - unsqueeze(input, [1])))   # [N, j, i]
    pairs = margins * unsqueeze(counts, [2]) * unsqueeze(1.0 - is_target, [1])
    return _reduce(reduce_sum(pairs, axis=[1, 2]) * (1.0 / classes), reduction, name)
