"""The accuracy op with caller-given ``correct``/``total`` variables of either form: 0-D (the op's
own, as the reference's 2.x op) or shape [1] (1.x programs create them so); results are written
into the caller's variables (through ``assign``) in their own shape."""
from __future__ import annotations

from ..ops.apply import apply_op
from . import tensor as _T
from .tensor import _key


def accuracy_counts(input, label, k=1, correct=None, total=None, shape=()):  # noqa: A002
    """Run the ``accuracy`` op; return its Accuracy reshaped to ``shape`` (``()`` keeps 0-D), and
    copy Correct/Total into ``correct``/``total`` when given."""
    outs = apply_op("accuracy", {"Out": input, "Label": label}, {"k": int(k)}, name_key=_key("accuracy"))
    for given, slot in ((correct, "Correct"), (total, "Total")):
        if given is not None:
            value = outs[slot][0]
            if len(given.shape) != 0:
                value = _T.reshape(value, list(given.shape) if -1 not in given.shape else [1])
            _T.assign(value, given)
    acc = outs["Accuracy"][0]
    return _T.reshape(acc, list(shape)) if shape else acc
