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


def test_static_auc_state_layout_window_and_fake_batches():
    T, steps = 20, 2
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        predict = static.data("p", [-1, 2], "float32")
        label = static.data("y", [-1, 1], "int64")
        weight = static.data("w", [1, 1], "float32")
        g, b, states = static.auc(predict, label, num_thresholds=T, slide_steps=steps, ins_tag_weight=weight)
    # the reference's layout: a ring of `steps` rows, their sum, a batch counter; global [1, T + 1]
    assert [tuple(s.shape) for s in states] == [((steps + 1) * (T + 1) + 1,)] * 2 + [(1, T + 1)] * 2
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    real = []
    for i, fake in enumerate([False, False, True, False]):
        p = rng.random(12).astype("float32")
        y = rng.integers(0, 2, 12)
        y[:2] = [0, 1]
        feed = {"p": np.stack([1 - p, p], 1), "y": y.reshape(-1, 1), "w": np.array([[0.0 if fake else 1.0]], "float32")}
        got_g, got_b, batch_pos = exe.run(main, feed=feed, fetch_list=[g, b, states[0]])
        real.append(None if fake else (p, y))
        kept = [r for r in real if r is not None]
        all_p, all_y = np.concatenate([r[0] for r in kept]), np.concatenate([r[1] for r in kept])
        assert got_g[0] == pytest.approx(mann_whitney(all_p, all_y, T), abs=1e-12)
        window = [r for r in real[-steps:] if r is not None]      # the last `steps` batches, fakes count nothing
        win_p, win_y = np.concatenate([r[0] for r in window]), np.concatenate([r[1] for r in window])
        assert got_b[0] == pytest.approx(mann_whitney(win_p, win_y, T), abs=1e-12)
        assert batch_pos[-1] == i + 1                                # the batch counter
        assert batch_pos[steps * (T + 1):-1].sum() == win_y.sum()    # the sum row
