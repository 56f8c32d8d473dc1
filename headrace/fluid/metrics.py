"""``fluid.metrics``: the 1.x Python metrics (``update`` with NumPy values, ``eval``, ``reset``).

As the reference: ``MetricBase.reset`` zeroes every attribute not starting with ``_`` by its
type; Precision and Recall round predictions with ``np.rint`` (0.5 is negative); Accuracy averages
per-batch accuracies weighted by batch size; Auc is the same bucketed ROC area as
``paddle.metric.Auc``.  ``DetectionMAP`` (it needs the detection_map op) is not provided.  One
difference: ``Auc.reset()`` empties the buckets (the reference's keeps them: its buckets are
``_``-prefixed, so the generic reset skips them).
"""
from __future__ import annotations

import copy

import numpy as np

from ..ops.metric import roc_auc


def _is_numpy_(var):
    return isinstance(var, (np.ndarray, np.generic))


def _is_number_(var):
    return (isinstance(var, (int, float, np.integer, np.floating)) and not isinstance(var, bool)) or \
        (isinstance(var, np.ndarray) and var.shape == (1,))


def _is_number_or_matrix_(var):
    return _is_number_(var) or isinstance(var, np.ndarray)


def _check(value, what, test, kind):
    if not test(value):
        raise ValueError(f"The '{what}' must be {kind}, got {type(value).__name__}.")


class MetricBase:
    """Base of the 1.x metrics: public attributes are the states."""

    def __init__(self, name):
        self._name = str(name) if name is not None else type(self).__name__

    def __str__(self):
        return self._name

    def _states(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def reset(self):
        """Zero every state: ints to 0, floats to 0.0, arrays to zeros, anything else to None."""
        for attr, value in self._states().items():
            if isinstance(value, int):
                setattr(self, attr, 0)
            elif isinstance(value, float):
                setattr(self, attr, 0.0)
            elif isinstance(value, (np.ndarray, np.generic)):
                setattr(self, attr, np.zeros_like(value))
            else:
                setattr(self, attr, None)

    def get_config(self):
        """``{'name': ..., 'states': {public attribute: value}}`` (a deep copy)."""
        return {"name": self._name, "states": copy.deepcopy(self._states())}

    def update(self, preds, labels):
        """Memorize one mini-batch (subclasses)."""
        raise NotImplementedError("Should not use it directly, please extend it.")

    def eval(self):
        """The metric over every mini-batch since ``reset`` (subclasses)."""
        raise NotImplementedError("Should not use it directly, please extend it.")


class CompositeMetric(MetricBase):
    """Several metrics with the same ``update`` arguments; ``eval`` returns their list."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        """Add a MetricBase."""
        if not isinstance(metric, MetricBase):
            raise ValueError("SubMetric should be inherit from MetricBase.")
        self._metrics.append(metric)

    def update(self, preds, labels):
        """Update every added metric."""
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self):
        """``[m.eval() for m in metrics]``."""
        return [m.eval() for m in self._metrics]


class Precision(MetricBase):
    """Binary precision tp / (tp + fp) of ``np.rint(preds)``."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        """Count a batch (preds: [N, 1] probabilities; labels: [N, 1] 0/1)."""
        _check(preds, "preds", _is_numpy_, "a numpy ndarray")
        _check(labels, "labels", _is_numpy_, "a numpy ndarray")
        hard = np.rint(preds).astype("int32").reshape(-1)[:labels.shape[0]]
        labels = labels.reshape(-1)
        self.tp += int(np.count_nonzero((hard == 1) & (labels == 1)))
        self.fp += int(np.count_nonzero((hard == 1) & (labels != 1)))

    def eval(self):
        """tp / (tp + fp), 0.0 without positive predictions."""
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0


class Recall(MetricBase):
    """Binary recall tp / (tp + fn) of ``np.rint(preds)``."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        """Count a batch (preds: [N, 1] probabilities; labels: [N, 1] 0/1)."""
        _check(preds, "preds", _is_numpy_, "a numpy ndarray")
        _check(labels, "labels", _is_numpy_, "a numpy ndarray")
        hard = np.rint(preds).astype("int32").reshape(-1)[:labels.shape[0]]
        labels = labels.reshape(-1)
        self.tp += int(np.count_nonzero((labels == 1) & (hard == 1)))
        self.fn += int(np.count_nonzero((labels == 1) & (hard != 1)))

    def eval(self):
        """tp / (tp + fn), 0.0 without positive labels."""
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0


class Accuracy(MetricBase):
    """Mean of per-batch accuracies weighted by batch size (``update(value, weight)``)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        """Add one batch's accuracy ``value`` (e.g. fetched from ``fluid.layers.accuracy``) with weight
        = its batch size."""
        _check(value, "value", _is_number_or_matrix_, "a number(int, float) or a numpy ndarray")
        _check(weight, "weight", _is_number_, "a number(int, float)")
        if weight < 0:
            raise ValueError("The 'weight' can not be negative")
        self.value += value * weight
        self.weight += weight

    def eval(self):
        """The weighted mean accuracy."""
        if self.weight == 0:
            raise ValueError("There is no data in Accuracy Metrics. Please check layers.accuracy output has added "
                             "to Accuracy.")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 of chunk detection from accumulated chunk counts."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        """Add a batch's chunk counts (as ``fluid.layers.chunk_eval`` returns them)."""
        for what, value in (("num_infer_chunks", num_infer_chunks), ("num_label_chunks", num_label_chunks),
                            ("num_correct_chunks", num_correct_chunks)):
            _check(value, what, _is_number_or_matrix_, "a number(int, float) or a numpy ndarray")
        # chunk_eval's fetched counts are [1] arrays: keep plain numbers so eval's float() works
        self.num_infer_chunks += np.sum(num_infer_chunks).item()
        self.num_label_chunks += np.sum(num_label_chunks).item()
        self.num_correct_chunks += np.sum(num_correct_chunks).item()

    def eval(self):
        """(precision, recall, f1)."""
        precision = float(self.num_correct_chunks) / self.num_infer_chunks if self.num_infer_chunks else 0
        recall = float(self.num_correct_chunks) / self.num_label_chunks if self.num_label_chunks else 0
        f1 = float(2 * precision * recall) / (precision + recall) if self.num_correct_chunks else 0
        return precision, recall, f1


class EditDistance(MetricBase):
    """Average edit distance and the share of sequence pairs with a non-zero distance."""

    def __init__(self, name):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        """Add a batch: ``distances`` [N, 1] and the number of sequence pairs."""
        _check(distances, "distances", _is_numpy_, "a numpy ndarray")
        _check(seq_num, "seq_num", _is_number_, "a number(int, float)")
        self.seq_num += seq_num
        self.instance_error += seq_num - np.sum(distances == 0)
        self.total_distance += np.sum(distances)

    def eval(self):
        """(average distance, instance error rate)."""
        if self.seq_num == 0:
            raise ValueError("There is no data in EditDistance Metric. Please check layers.edit_distance output has "
                             "been added to EditDistance.")
        return self.total_distance / self.seq_num, self.instance_error / float(self.seq_num)


class Auc(MetricBase):
    """Bucketed ROC AUC of ``preds[:, 1]`` (only ``curve='ROC'``, as the reference)."""

    def __init__(self, name, curve="ROC", num_thresholds=4095):
        super().__init__(name)
        if curve != "ROC":
            raise NotImplementedError(f"fluid.metrics.Auc: only curve='ROC' is supported, got {curve!r}")
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def update(self, preds, labels):
        """Add a batch: preds [N, 2] probabilities, labels [N, 1] (non-zero = positive)."""
        _check(labels, "labels", _is_numpy_, "a numpy ndarray")
        _check(preds, "predictions", _is_numpy_, "a numpy ndarray")
        bins = (preds[:, 1] * self._num_thresholds).astype(np.int64)
        if bins.size and (bins.min() < 0 or bins.max() > self._num_thresholds):
            raise ValueError("fluid.metrics.Auc: preds[:, 1] must be probabilities in [0, 1]")
        labels = labels.reshape(-1)
        self._stat_pos += np.bincount(bins[labels != 0], minlength=self._num_thresholds + 1)
        self._stat_neg += np.bincount(bins[labels == 0], minlength=self._num_thresholds + 1)

    def reset(self):
        """Empty the buckets."""
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def eval(self):
        """The area under the bucketed ROC curve."""
        return roc_auc(self._stat_pos, self._stat_neg)
