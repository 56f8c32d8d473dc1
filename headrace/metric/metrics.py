"""The reference's ``paddle.metric`` classes, with its contract.

A metric is used in two halves.  ``compute(outputs..., labels...)`` runs on the graph side: it
takes the model's outputs and labels as Tensors (eager) or Variables (static, where it appends
ops to the Program) and returns the metric's *states* (default: its arguments unchanged).
``update(states...)`` takes those states as NumPy arrays or eager Tensors, folds them into the
running totals and returns the value for this batch; ``accumulate()`` returns the value over every
batch since ``reset()``; ``name()`` names the value(s).  As the reference: ``Accuracy`` returns a
list when it has several ``topk`` values; ``Precision``/``Recall`` are binary (a prediction is
positive when it rounds to 1); ``Auc`` buckets the positive-class probability ``preds[:, 1]`` into
``num_thresholds + 1`` bins and sums trapezoids from the highest bin down (only the ROC curve).
"""
from __future__ import annotations

import abc
import numbers

import numpy as np

from ..core.dtypes import int32, int64
from ..eager import Tensor
from ..nn import functional as _F
from ..nn import tensor as _T
from ..nn import tensor_search as _S
from ..ops.metric import roc_auc


def _as_numpy(value, what, method):
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise ValueError(f"The '{what}' must be a numpy ndarray or Tensor ({method}() got "
                     f"{type(value).__name__}).")


class Metric(abc.ABC):
    """Base class of the metrics: subclasses define ``reset``, ``update``, ``accumulate`` and
    ``name``, and may override ``compute`` (graph-side work whose outputs ``update`` receives)."""

    def __init__(self):
        pass

    @abc.abstractmethod
    def reset(self):
        """Clear the running states."""
        raise NotImplementedError(f"function 'reset' not implemented in {type(self).__name__}.")

    @abc.abstractmethod
    def update(self, *args):
        """Fold one batch's states (the outputs of ``compute``, as NumPy) into the totals."""
        raise NotImplementedError(f"function 'update' not implemented in {type(self).__name__}.")

    @abc.abstractmethod
    def accumulate(self):
        """The metric over every batch since the last ``reset``."""
        raise NotImplementedError(f"function 'accumulate' not implemented in {type(self).__name__}.")

    @abc.abstractmethod
    def name(self):
        """The metric's name (a list of names for metrics with several values)."""
        raise NotImplementedError(f"function 'name' not implemented in {type(self).__name__}.")

    def compute(self, *args):
        """Graph-side part: by default the model outputs and labels pass through unchanged."""
        return args


class Accuracy(Metric):
    """Top-k accuracy for each k in ``topk``; the name is ``acc`` (``acc_top{k}`` per k when the
    largest k is not 1).  ``compute(pred [N, ..., C], label [N, ..., 1] or one-hot)`` returns the
    float32 correct mask [N, ..., max(topk)]; ``update(correct)`` returns this batch's accuracy
    (a list when there are several k)."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(topk, numbers.Integral) or not all(isinstance(k, numbers.Integral) and k >= 1 for k in topk):
            raise TypeError(f"Accuracy: topk must be a tuple or list of positive ints such as (1, 5), got {topk!r}")
        self.topk = topk
        self.maxk = max(topk)
        self._init_name(name)
        self.reset()

    def compute(self, pred, label, *args):
        """Correct mask of the ``maxk`` highest-scoring classes (float32 [..., maxk])."""
        pred = _S.argsort(pred, descending=True)
        pred = _T.slice(pred, axes=[len(pred.shape) - 1], starts=[0], ends=[self.maxk])
        if len(label.shape) == 1 or (len(label.shape) == 2 and label.shape[-1] == 1):
            label = _T.reshape(label, (-1, 1))
        elif label.shape[-1] != 1:     # one-hot labels
            label = _S.argmax(label, axis=-1, keepdim=True)
        if label.dtype != int64:      # argsort gives int64 indices; int32 labels compare after a cast
            label = _T.cast(label, "int64")
        return _T.cast(pred == label, "float32")

    def update(self, correct, *args):
        """Add a batch's correct mask; return its accuracy (one float per k)."""
        correct = _as_numpy(correct, "correct", "Accuracy.update")
        num_samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            num_corrects = correct[..., :k].sum()
            accs.append(float(num_corrects) / num_samples if num_samples else 0.0)
            self.total[i] += num_corrects
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        """Zero the correct and sample counts."""
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        """Accuracy over every batch since ``reset`` (a list when there are several k)."""
        res = [float(t) / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def _init_name(self, name):
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]

    def name(self):
        """``['acc']``, or ``['acc_top1', 'acc_top5', ...]``."""
        return self._name


class _Binary(Metric):
    """Counting base of Precision and Recall: predictions are rounded to 0/1."""

    def __init__(self, name, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._name = name
        self.reset()

    def _pairs(self, preds, labels, method, rounding):
        preds = _as_numpy(preds, "preds", method)
        labels = _as_numpy(labels, "labels", method)
        if preds.shape[:1] != labels.shape[:1] or preds.size != labels.size:
            raise ValueError(f"{method}(): preds and labels must hold one value per sample with the same "
                             f"shape, got {list(preds.shape)} and {list(labels.shape)}")
        return rounding(preds).astype("int32").reshape(-1), labels.reshape(-1)

    def name(self):
        """The name given at construction."""
        return self._name


class Precision(_Binary):
    """Binary precision tp / (tp + fp); a prediction is positive when ``floor(p + 0.5) == 1``
    (so 0.5 counts as positive, as the reference)."""

    def __init__(self, name="precision", *args, **kwargs):
        super().__init__(name, *args, **kwargs)

    def update(self, preds, labels):
        """Count true and false positives of a batch (preds: probabilities, labels: 0/1)."""
        preds, labels = self._pairs(preds, labels, "Precision.update", lambda p: np.floor(p + 0.5))
        positive = preds == 1
        self.tp += int(np.count_nonzero(positive & (labels == 1)))
        self.fp += int(np.count_nonzero(positive & (labels != 1)))

    def reset(self):
        """Zero the counts."""
        self.tp = 0
        self.fp = 0

    def accumulate(self):
        """tp / (tp + fp), 0.0 when nothing was predicted positive."""
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0


class Recall(_Binary):
    """Binary recall tp / (tp + fn); predictions are rounded half to even (``np.rint``: 0.5 is
    negative), as the reference."""

    def __init__(self, name="recall", *args, **kwargs):
        super().__init__(name, *args, **kwargs)

    def update(self, preds, labels):
        """Count true positives and false negatives of a batch."""
        preds, labels = self._pairs(preds, labels, "Recall.update", np.rint)
        relevant = labels == 1
        self.tp += int(np.count_nonzero(relevant & (preds == 1)))
        self.fn += int(np.count_nonzero(relevant & (preds != 1)))

    def reset(self):
        """Zero the counts."""
        self.tp = 0
        self.fn = 0

    def accumulate(self):
        """tp / (tp + fn), 0.0 when there was no positive label."""
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0


class Auc(Metric):
    """Area under the ROC curve from ``num_thresholds + 1`` buckets of ``preds[:, 1]`` (the
    positive class's probability; ``preds`` is [N, 2]) against ``labels`` [N, 1] (non-zero =
    positive).  Only ``curve='ROC'`` is computed (the reference's Python metric, too)."""

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        super().__init__(*args, **kwargs)
        if curve != "ROC":
            raise NotImplementedError(f"Auc: only curve='ROC' is supported (as the reference's metric), got {curve!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, numbers.Integral) or num_thresholds < 1:
            raise ValueError(f"Auc: num_thresholds must be a positive int, got {num_thresholds!r}")
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._name = name
        self.reset()

    def update(self, preds, labels):
        """Add a batch: each row goes to bucket ``int(preds[i, 1] * num_thresholds)``."""
        labels = _as_numpy(labels, "labels", "Auc.update").reshape(-1)
        preds = _as_numpy(preds, "preds", "Auc.update")
        if preds.ndim != 2 or preds.shape[1] < 2 or preds.shape[0] != labels.shape[0]:
            raise ValueError(f"Auc.update(): preds must be [N, 2] class probabilities and labels [N, 1], got "
                             f"{list(preds.shape)} and {list(labels.shape)}")
        value = preds[:, 1]
        if value.size and (value.min() < 0 or value.max() > 1):
            raise ValueError(f"Auc.update(): preds[:, 1] must be probabilities in [0, 1], got values in "
                             f"[{value.min()}, {value.max()}]")
        bins = (value * self._num_thresholds).astype(np.int64)
        width = self._num_thresholds + 1
        self._stat_pos += np.bincount(bins[labels != 0], minlength=width)
        self._stat_neg += np.bincount(bins[labels == 0], minlength=width)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        """Area of the trapezoid between x1 and x2 with heights y1 and y2."""
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self):
        """The area under the bucketed ROC curve (0.0 without both classes)."""
        return roc_auc(self._stat_pos, self._stat_neg)

    def reset(self):
        """Empty the buckets."""
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self):
        """The name given at construction."""
        return self._name


def accuracy(input, label, k=1, correct=None, total=None, name=None):  # noqa: A002
    """Top-``k`` accuracy of ``input`` [N, C] scores against ``label`` [N, 1] (int64; int32 is
    cast), a 0-D float32, in eager and static mode; ``correct``/``total`` (int32) receive the
    counts when given."""
    if label.dtype == int32:
        label = _T.cast(label, "int64")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"accuracy: k must be an int, got {k!r}")
    del name  # accepted for compatibility: the op's outputs are named by the program
    return _F.accuracy(input, label, int(k), correct, total)
