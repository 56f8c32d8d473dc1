"""paddle.metric against NumPy written here: top-k by sorting, precision/recall by counting,
AUC by the Mann-Whitney pair count (exact) and a bucketed case worked out by hand."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context

rng = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def eager_mode():
    """These tests run in eager mode (as a 2.x user) unless they enter static mode themselves."""
    with context.static_mode_guard(False):
        yield


def numpy_topk_correct(pred, label, k):
    """Is the label among the k largest scores (stable descending order)?"""
    order = np.argsort(-pred, axis=-1, kind="stable")[..., :k]
    return (order == label.reshape(order.shape[:-1] + (1,))).any(axis=-1)


def test_accuracy_docs_example_and_names():
    x = paddle.to_tensor(np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.4, 0.3, 0.2],
                                   [0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]]))
    y = paddle.to_tensor(np.array([[0], [1], [2], [3]]))
    m = paddle.metric.Accuracy()
    correct = m.compute(x, y)
    assert list(correct.shape) == [4, 1] and correct.dtype == paddle.float32
    assert m.update(correct) == 0.75
    assert m.accumulate() == 0.75 and m.name() == ["acc"]
    assert paddle.metric.Accuracy(topk=(1, 3), name="a").name() == ["a_top1", "a_top3"]
    with pytest.raises(TypeError, match="topk"):
        paddle.metric.Accuracy(topk=5)


def test_accuracy_topk_accumulates_over_batches():
    m = paddle.metric.Accuracy(topk=(1, 2, 5))
    hits, seen = np.zeros(3), 0
    for n in (7, 12):
        pred = rng.random((n, 6)).astype("float32")
        label = rng.integers(0, 6, (n, 1))
        batch = m.update(m.compute(paddle.to_tensor(pred), paddle.to_tensor(label)))
        want = [numpy_topk_correct(pred, label, k).mean() for k in (1, 2, 5)]
        assert isinstance(batch, list)
        np.testing.assert_allclose(batch, want)
        hits += [numpy_topk_correct(pred, label, k).sum() for k in (1, 2, 5)]
        seen += n
    np.testing.assert_allclose(m.accumulate(), hits / seen)
    m.reset()
    assert m.accumulate() == [0.0, 0.0, 0.0]


def test_accuracy_one_hot_flat_and_sequence_labels():
    pred = rng.random((5, 4)).astype("float32")
    label = rng.integers(0, 4, 5)
    m = paddle.metric.Accuracy()
    flat = m.update(m.compute(paddle.to_tensor(pred), paddle.to_tensor(label)))        # [N] labels
    assert m.update(m.compute(paddle.to_tensor(pred), paddle.to_tensor(label.astype("int32")))) == flat
    onehot = m.update(m.compute(paddle.to_tensor(pred), paddle.to_tensor(np.eye(4)[label].astype("int64"))))
    assert flat == onehot == numpy_topk_correct(pred, label, 1).mean()
    seq, seq_label = rng.random((3, 4, 5)).astype("float32"), rng.integers(0, 5, (3, 4, 1))
    m2 = paddle.metric.Accuracy(topk=(2,))
    got = m2.update(m2.compute(paddle.to_tensor(seq), paddle.to_tensor(seq_label)).numpy())
    assert got == pytest.approx(numpy_topk_correct(seq, seq_label, 2).mean())     # N * T samples
    assert m2.count == [12]


def test_accuracy_compute_in_static_mode_then_update_with_numpy():
    pred = rng.random((8, 5)).astype("float32")
    label = rng.integers(0, 5, (8, 1))
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            p = static.data("p", [-1, 5], "float32")
            y = static.data("y", [-1, 1], "int64")
            m = paddle.metric.Accuracy(topk=(1, 3))
            correct = m.compute(p, y)
        exe = static.Executor(static.CPUPlace())
        out, = exe.run(main, feed={"p": pred, "y": label}, fetch_list=[correct])
    assert out.shape == (8, 3)
    np.testing.assert_allclose(m.update(out), [numpy_topk_correct(pred, label, k).mean() for k in (1, 3)])


def test_precision_recall_docs_examples_and_rounding():
    x = np.array([0.1, 0.5, 0.6, 0.7])
    p = paddle.metric.Precision()
    p.update(x, np.array([0, 1, 1, 1]))
    assert p.accumulate() == 1.0 and p.name() == "precision"
    r = paddle.metric.Recall()
    r.update(x, np.array([1, 0, 1, 1]))
    assert r.accumulate() == pytest.approx(2 / 3) and r.name() == "recall"
    # 0.5 rounds up for Precision (floor(p + 0.5)) and to even (0) for Recall, as the reference
    p2, r2 = paddle.metric.Precision(), paddle.metric.Recall()
    p2.update(paddle.to_tensor(np.array([[0.5]])), paddle.to_tensor(np.array([[0]])))
    r2.update(np.array([[0.5]]), np.array([[1]]))
    assert (p2.tp, p2.fp, r2.tp, r2.fn) == (0, 1, 0, 1)
    with pytest.raises(ValueError, match="preds"):
        p.update([0.3], np.array([1]))
    p.reset()
    r.reset()
    assert p.accumulate() == 0.0 and r.accumulate() == 0.0


def test_precision_recall_random_against_counts():
    preds, labels = rng.random((50, 1)), rng.integers(0, 2, (50, 1))
    hard = preds >= 0.5
    p, r = paddle.metric.Precision(), paddle.metric.Recall()
    for lo in range(0, 50, 20):
        p.update(preds[lo:lo + 20], labels[lo:lo + 20])
        r.update(preds[lo:lo + 20], labels[lo:lo + 20])
    tp = np.sum(hard & (labels == 1))
    assert p.accumulate() == pytest.approx(tp / hard.sum())
    assert r.accumulate() == pytest.approx(tp / (labels == 1).sum())


def exact_auc(scores, labels):
    """Probability that a positive scores above a negative (ties count one half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    return ((pos[:, None] > neg).sum() + 0.5 * (pos[:, None] == neg).sum()) / (len(pos) * len(neg))


def test_auc_well_separated_scores_match_exact_auc():
    scores = rng.permutation(np.arange(1, 41) / 41.0)     # 40 distinct scores, 1/41 apart > 1/4095
    labels = (rng.random(40) < scores).astype("int64")
    m = paddle.metric.Auc()
    for lo in (0, 15):
        sl = slice(lo, lo + 15 if lo == 0 else 40)
        m.update(np.stack([1 - scores[sl], scores[sl]], 1), labels[sl].reshape(-1, 1))
    assert m.accumulate() == pytest.approx(exact_auc(scores, labels), abs=1e-12)
    assert m.name() == "auc"


def test_auc_bucketed_by_hand():
    # num_thresholds=4: buckets int(p * 4): 0.1->0, 0.3->1, 0.3->1, 0.6->2, 0.9->3
    # positives in buckets 1, 2, 3; negatives in 0, 1.  From the top: (pos, neg) = (1,0), (2,0),
    # (3,1) adds 1 * (3 + 2) / 2 = 2.5, (3,2) adds 1 * (3 + 3) / 2 = 3  ->  5.5 / (3 * 2)
    p = np.array([0.1, 0.3, 0.3, 0.6, 0.9])
    m = paddle.metric.Auc(num_thresholds=4)
    m.update(paddle.to_tensor(np.stack([1 - p, p], 1)), paddle.to_tensor(np.array([[0], [0], [1], [1], [1]])))
    assert m.accumulate() == pytest.approx(5.5 / 6)
    m.reset()
    assert m.accumulate() == 0.0
    m.update(np.array([[0.2, 0.8]]), np.array([[1]]))       # positives only
    assert m.accumulate() == 0.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        m.update(np.array([[0.0, 1.5]]), np.array([[1]]))
    with pytest.raises(NotImplementedError, match="ROC"):
        paddle.metric.Auc(curve="PR")


def test_metric_base_is_abstract_and_compute_passes_through():
    with pytest.raises(TypeError):
        paddle.metric.Metric()

    class Count(paddle.metric.Metric):
        def reset(self):
            self.n = 0

        def update(self, x, *args):
            self.n += len(x)

        def accumulate(self):
            return self.n

        def name(self):
            return "count"

    c = Count()
    c.reset()
    a, b = c.compute(np.ones(3), np.zeros(3))
    c.update(a)
    assert c.accumulate() == 3 and b.shape == (3,)


def test_accuracy_function_eager_and_static():
    pred = rng.random((6, 4)).astype("float32")
    label = rng.integers(0, 4, (6, 1))
    want = numpy_topk_correct(pred, label, 2)
    acc = paddle.metric.accuracy(paddle.to_tensor(pred), paddle.to_tensor(label.astype("int32")), k=2)
    assert list(acc.shape) == [] and float(acc) == pytest.approx(want.mean())
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            p = static.data("p", [-1, 4], "float32")
            y = static.data("y", [-1, 1], "int64")
            correct = static.create_global_var([], 0, "int32", persistable=True, name="n_correct")
            total = static.create_global_var([], 0, "int32", persistable=True, name="n_total")
            acc = paddle.metric.accuracy(p, y, k=2, correct=correct, total=total)
        exe = static.Executor(static.CPUPlace())
        exe.run(startup)
        a, c, t = exe.run(main, feed={"p": pred, "y": label}, fetch_list=[acc, correct, total])
    assert a == pytest.approx(want.mean()) and int(c) == want.sum() and int(t) == 6


def test_reference_unit_test_cases():
    """The values the reference's own test_metrics.py asserts."""
    x = np.array([[0.78, 0.22], [0.62, 0.38], [0.55, 0.45], [0.30, 0.70], [0.14, 0.86], [0.59, 0.41],
                  [0.91, 0.08], [0.16, 0.84]])
    y = np.array([[0], [1], [1], [0], [1], [0], [0], [1]])
    m = paddle.metric.Auc()
    m.update(paddle.to_tensor(x), paddle.to_tensor(y))
    assert m.accumulate() == pytest.approx(0.8125)
    p = paddle.metric.Precision()
    p.update(np.array([0.1, 0.5, 0.6, 0.7]), np.array([1, 0, 1, 1]))
    assert p.accumulate() == pytest.approx(2 / 3)
    p.update(paddle.to_tensor(np.array([0.1, 0.5, 0.6, 0.7, 0.2])), paddle.to_tensor(np.array([1, 0, 1, 1, 1])))
    assert p.accumulate() == pytest.approx(4 / 6)
    r = paddle.metric.Recall()
    r.update(np.array([0.1, 0.5, 0.6, 0.7]), np.array([1, 0, 1, 1]))
    r.update(paddle.to_tensor(np.array([0.1, 0.5, 0.6, 0.7])), paddle.to_tensor(np.array([1, 0, 0, 1])))
    assert r.accumulate() == pytest.approx(3 / 5)
    acc = paddle.metric.Accuracy(name="my_acc")
    first = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.4, 0.3, 0.2], [0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]])
    second = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.3, 0.4, 0.2], [0.1, 0.2, 0.4, 0.3], [0.1, 0.2, 0.3, 0.4]])
    assert acc.update(acc.compute(paddle.to_tensor(first), paddle.to_tensor(np.array([0, 1, 2, 3])))) == 0.75
    assert acc.update(acc.compute(paddle.to_tensor(second), paddle.to_tensor(np.array([[0], [1], [2], [3]])))) == 0.5
    assert acc.accumulate() == 0.625 and acc.name() == ["my_acc"]
