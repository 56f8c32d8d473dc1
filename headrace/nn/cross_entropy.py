"""``paddle.nn.functional.cross_entropy`` and ``softmax_with_cross_entropy`` with the reference's
weight, label smoothing, soft labels, ignore_index, axis, use_softmax and reductions.

- ``label_smoothing > 0``: hard labels become one-hot rows along ``axis``, then ``label_smooth``
  (uniform ``eps / C``), and the loss is the soft-label loss, as in the reference.  (Differences:
  the reference one-hots along the last dim whatever ``axis`` is, and only labels without the
  class dim; its one_hot rejects a label outside ``[0, C)``, where ours gives an all-zero row.)
- ``weight`` [C]: each sample's loss is multiplied by ``weight[label]`` (hard; 0 for ignored
  labels) or ``sum_c label_c weight_c`` (soft).
- ``reduction='mean'``: with hard labels and ``ignore_index >= 0`` the summed loss is divided
  by the number of labels that are not ``ignore_index`` (with ``weight``: by their summed
  weights); otherwise by the summed per-sample weights (with ``weight``) or the number of
  samples — so with the default ``ignore_index=-100`` ignored samples still count in the mean,
  as in the reference.  A zero denominator counts as 1 (the reference's ``x + (x == 0)``).
- ``reduction='none'``: a label given without the class dim gives a loss without it.
"""
from __future__ import annotations

from ..core.errors import AttrError, located
from ..ops.apply import apply_op, apply_op_single
from .loss import _check_reduction, _const, label_smooth, one_hot_along
from .tensor import _key, cast, mean, reshape, squeeze, sum as reduce_sum, unsqueeze

def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Softmax of ``logits`` along ``axis`` and its cross entropy with ``label`` (shape [..., 1, ...])."""
    outs = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                    {"soft_label": bool(soft_label), "ignore_index": int(ignore_index),
                     "numeric_stable_mode": bool(numeric_stable_mode), "axis": int(axis)},
                    name_key=_key("softmax_with_cross_entropy"))
    loss, softmax_out = outs["Loss"][0], outs["Softmax"][0]
    return (loss, softmax_out) if return_softmax else loss


def _safe_divide(total, denominator):
    """``total / (d + (d == 0))``."""
    zero = cast(apply_op_single("equal", {"X": denominator, "Y": _const(0.0, denominator.dtype)}),
                denominator.dtype)
    return total / (denominator + zero)


def _valid(label, ignore_index, dtype):
    return cast(apply_op_single("not_equal", {"X": label, "Y": _const(ignore_index, label.dtype)}), dtype)


def _class_weights(weight, label, soft_label, ignore_index, axis, rank, dtype):
    """Per-sample weights, shaped like the loss (size 1 along ``axis``; 0 for ignored labels)."""
    classes = weight.shape[0]
    shaped = reshape(weight, [classes] + [1] * (rank - 1 - axis))
    if soft_label:
        return reduce_sum(label * shaped, axis=axis, keepdim=True)
    rows = one_hot_along(label, classes, axis, dtype)
    return reduce_sum(rows * shaped, axis=axis, keepdim=True) * _valid(label, ignore_index, dtype)


def _mean(loss, label, weights, soft_label, ignore_index):
    total = reduce_sum(loss)
    if not soft_label and ignore_index >= 0:
        # ignored samples have loss 0 and (with weight) weight 0 already
        return _safe_divide(total, reduce_sum(_valid(label, ignore_index, loss.dtype) if weights is None else weights))
    if weights is not None:
        return _safe_divide(total, reduce_sum(weights))
    return mean(loss)


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, label_smoothing=0.0, name=None):
    """Softmax (unless ``use_softmax=False``) + cross entropy + reduction; see the module docstring."""
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise located(AttrError, f"cross_entropy(): label_smoothing must be in [0, 1], got {label_smoothing!r}")
    rank = len(input.shape)
    axis = axis % rank if -rank <= axis < rank else axis
    if not 0 <= axis < rank:
        raise located(AttrError, f"cross_entropy(): axis must be in [-{rank}, {rank}), got {axis}")
    squeeze_out = not soft_label and len(label.shape) == rank - 1
    if squeeze_out:
        label = unsqueeze(label, [axis])
    if label_smoothing > 0.0:
        if not soft_label:
            label = one_hot_along(label, input.shape[axis], axis, input.dtype)
            squeeze_out = False
        label = label_smooth(label, epsilon=label_smoothing) if axis == rank - 1 else \
            label * (1.0 - label_smoothing) + label_smoothing / input.shape[axis]
        soft_label = True
    key = _key("cross_entropy", name)
    loss = apply_op("softmax_with_cross_entropy", {"Logits": input, "Label": label},
                    {"soft_label": bool(soft_label), "ignore_index": int(ignore_index), "axis": int(axis),
                     "use_softmax": bool(use_softmax)}, name_key=key)["Loss"][0]
    weights = None
    if weight is not None:
        weights = _class_weights(weight, label, soft_label, ignore_index, axis, rank, input.dtype)
        loss = loss * weights
    if reduction == "none":
        return squeeze(loss, [axis]) if squeeze_out else loss
    if reduction == "sum":
        return reduce_sum(loss)
    return _mean(loss, label, weights, soft_label, ignore_index)
