"""fluid.layers.accuracy / auc and static.accuracy: return forms and counts as the reference
(1.x: Accuracy, Correct, Total of shape [1]; auc: global AUC, batch AUC, four persistable count
states accumulating across runs), checked against NumPy written here."""
import numpy as np
import pytest

import headrace.fluid as fluid
import headrace.static as static

rng = np.random.default_rng(5)


def topk_hits(scores, label, k):
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return int((order == label).any(axis=1).sum())


def test_fluid_accuracy_writes_shape_1_counts_across_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [5])
        y = fluid.layers.data("y", [1], dtype="int64")
        correct = fluid.layers.create_global_var([1], 0, "int32", persistable=True)
        total = fluid.layers.create_global_var([1], 0, "int32", persistable=True)
        acc = fluid.layers.accuracy(input=x, label=y, k=2, correct=correct, total=total)
        acc0d = static.accuracy(x, y, k=1)
    assert tuple(acc.shape) == (1,) and tuple(acc0d.shape) == ()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for n in (6, 9):
        scores, label = rng.random((n, 5)).astype("float32"), rng.integers(0, 5, (n, 1))
        a, c, t, a1 = exe.run(main, feed={"x": scores, "y": label}, fetch_list=[acc, correct, total, acc0d])
        assert a.shape == (1,) and c.shape == (1,) and t.shape == (1,)
        assert c[0] == topk_hits(scores, label, 2) and t[0] == n     # this batch's counts, as the reference
        assert a[0] == pytest.approx(c[0] / n) and a1 == pytest.approx(topk_hits(scores, label, 1) / n)


def mann_whitney(scores, labels, thresholds):
    b = (scores * thresholds).astype(np.int64)
    pos, neg = b[labels == 1], b[labels == 0]
    return ((pos[:, None] > neg).sum() + 0.5 * (pos[:, None] == neg).sum()) / (len(pos) * len(neg))


def test_fluid_auc_returns_and_accumulates():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        predict = fluid.layers.data("p", [2])
        label = fluid.layers.data("y", [1], dtype="int64")
        auc_out, batch_auc, states = fluid.layers.auc(input=predict, label=label, num_thresholds=200)
    assert len(states) == 4 and all(s.persistable and s.dtype == "int64" for s in states)
    assert auc_out.dtype == "float64" and tuple(auc_out.shape) == (1,)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    seen_p, seen_y = [], []
    for n in (30, 25, 40):
        p = rng.random(n)
        y = (rng.random(n) < p).astype("int64")
        seen_p.append(p)
        seen_y.append(y)
        g, b, stat_pos = exe.run(main, feed={"p": np.stack([1 - p, p], 1).astype("float32"), "y": y.reshape(-1, 1)},
                                 fetch_list=[auc_out, batch_auc, states[2]])
        all_p, all_y = np.concatenate(seen_p), np.concatenate(seen_y)
        assert g[0] == pytest.approx(mann_whitney(all_p.astype("float32"), all_y, 200), abs=1e-12)
        assert b[0] == pytest.approx(mann_whitney(p.astype("float32"), y, 200), abs=1e-12)   # slide_steps=1
        assert stat_pos.sum() == all_y.sum()
