"""fluid.metrics (1.x): the reference's documented examples and counts written here."""
import numpy as np
import pytest

import headrace.fluid as fluid

PREDS = np.array([[0.1], [0.7], [0.8], [0.9], [0.2], [0.2], [0.3], [0.5], [0.8], [0.6]])
LABELS = np.array([[0], [1], [1], [1], [1], [0], [0], [0], [0], [0]])


def test_precision_recall_composite_docs_example():
    # rint: predicted positive = 0.7, 0.8, 0.9, 0.8, 0.6 (0.5 rounds to 0); 3 of them are labelled 1
    comp = fluid.metrics.CompositeMetric()
    precision, recall = fluid.metrics.Precision(), fluid.metrics.Recall()
    comp.add_metric(precision)
    comp.add_metric(recall)
    comp.update(preds=PREDS, labels=LABELS)
    assert comp.eval() == [pytest.approx(3 / 5), pytest.approx(3 / 4)]
    assert precision.get_config() == {"name": "Precision", "states": {"tp": 3, "fp": 2}}
    precision.reset()
    assert (precision.tp, precision.fp, precision.eval()) == (0, 0, 0.0)
    with pytest.raises(ValueError, match="SubMetric"):
        comp.add_metric(object())
    with pytest.raises(ValueError, match="preds"):
        recall.update([0.3], LABELS)


def test_accuracy_weighted_mean_and_errors():
    acc = fluid.metrics.Accuracy()
    with pytest.raises(ValueError, match="There is no data"):
        acc.eval()
    acc.update(value=0.9, weight=128)
    acc.update(value=np.array([0.8]), weight=64)
    assert acc.eval() == pytest.approx([(0.9 * 128 + 0.8 * 64) / 192])     # a [1] array value stays an array
    with pytest.raises(ValueError, match="negative"):
        acc.update(0.5, -1)
    acc.reset()
    assert acc.value == 0.0 and acc.weight == 0.0


def test_chunk_evaluator_edit_distance_and_auc():
    chunks = fluid.metrics.ChunkEvaluator()
    chunks.update(10, 9, 8)
    p, r, f1 = chunks.eval()
    assert (p, r) == (0.8, 8 / 9) and f1 == pytest.approx(2 * 0.8 * (8 / 9) / (0.8 + 8 / 9))
    dist = fluid.metrics.EditDistance("ed")
    dist.update(np.array([[0], [2], [3], [0]]), 4)
    assert dist.eval() == (5 / 4, 2 / 4) and str(dist) == "ed"
    auc = fluid.metrics.Auc("auc", num_thresholds=4)
    p = np.array([0.1, 0.3, 0.3, 0.6, 0.9])
    auc.update(np.stack([1 - p, p], 1), np.array([[0], [0], [1], [1], [1]]))
    assert auc.eval() == pytest.approx(5.5 / 6)      # the hand-computed case of test_metrics.py
    auc.reset()
    assert auc.eval() == 0.0
