"""fluid 1.x loss layers (``fluid.layers.huber_loss``, ``kldiv_loss``, ``mse_loss``,
``margin_rank_loss``, ``rank_loss``, ``smooth_l1``) with the 1.x arguments and output shapes,
built from the same ops as ``nn/loss.py``."""
from __future__ import annotations

from ..ops.apply import apply_op
from .loss import _op, _unary, sigmoid_cross_entropy_with_logits
from .tensor import _key, mean, sum as reduce_sum


def huber_loss(input, label, delta):
    """Elementwise Huber loss of ``label - input`` (shape of ``input``, usually [N, 1])."""
    return apply_op("huber_loss", {"X": input, "Y": label}, {"delta": float(delta)},
                    name_key=_key("huber_loss"))["Out"][0]


def kldiv_loss(x, target, reduction="mean", name=None):
    """``target * (log(target) - x)`` reduced by 'none' | 'batchmean' | 'mean' | 'sum'."""
    return _op("kldiv_loss", {"X": x, "Target": target}, {"reduction": reduction}, name=name, out_slot="Loss")


def mse_loss(input, label):
    """``mean((input - label)^2)``."""
    return mean(_unary("square", input - label))


def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """Elementwise ``max(0, -label * (left - right) + margin)``."""
    return _unary("relu", -label * (left - right) + margin)


def rank_loss(label, left, right, name=None):
    """RankNet: ``log(1 + exp(left - right)) - label * (left - right)`` (elementwise)."""
    return sigmoid_cross_entropy_with_logits(left - right, label, name=name)


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Per-sample sum (shape [N, 1]) of ``0.5 (sigma d)^2`` where ``|d| < 1 / sigma^2``, else
    ``|d| - 0.5 / sigma^2``, ``d = (x - y) * inside_weight``, times ``outside_weight``."""
    sigma2 = float(sigma if sigma is not None else 1.0) ** 2
    diff = x - y
    if inside_weight is not None:
        diff = diff * inside_weight
    # huber with delta = 1 / sigma^2, divided by delta: 0.5 sigma^2 d^2 inside, |d| - 0.5 / sigma^2 outside
    delta = 1.0 / sigma2
    zeros = diff * 0.0
    value = apply_op("huber_loss", {"X": zeros, "Y": diff}, {"delta": delta}, name_key=_key("smooth_l1"))["Out"][0]
    value = value * sigma2
    if outside_weight is not None:
        value = value * outside_weight
    rank = len(value.shape)
    return reduce_sum(value, axis=list(range(1, rank)), keepdim=True) if rank > 1 else value


__all__ = ["huber_loss", "kldiv_loss", "margin_rank_loss", "mse_loss", "rank_loss", "smooth_l1"]
