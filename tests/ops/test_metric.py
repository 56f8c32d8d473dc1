"""The auc op and static.auc against the Mann-Whitney statistic written here (bucketed scores)."""
import numpy as np

import headrace.fluid as fluid
import headrace.static as static
from headrace.core.errors import AttrError, ShapeError
from headrace.ops.apply import apply_op
from tests.ops.harness import check_build_error

rng = np.random.default_rng(12)
T = 50


def mann_whitney(scores, labels):
    """P(positive's bucket > negative's bucket) + 1/2 P(equal buckets), over all pairs."""
    buckets = (scores * T).astype(np.int64)
    pos, neg = buckets[labels > 0], buckets[labels <= 0]
    if not len(pos) or not len(neg):
        return 0.0
    greater = (pos[:, None] > neg[None, :]).sum()
    equal = (pos[:, None] == neg[None, :]).sum()
    return (greater + 0.5 * equal) / (len(pos) * len(neg))


def batch(n=40):
    p = rng.uniform(0, 1, n)
    labels = (rng.uniform(0, 1, n) < p).astype("int64")    # informative scores
    return np.stack([1 - p, p], axis=1).astype("float32"), labels.reshape(-1, 1)


def test_static_auc_global_and_sliding_window():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        predict = static.data("predict", [-1, 2], "float32")
        label = static.data("label", [-1, 1], "int64")
        global_auc, batch_auc, stats = static.auc(predict, label, num_thresholds=T, slide_steps=2)
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    seen = []
    for _ in range(3):
        p, y = batch()
        seen.append((p, y))
        g, b, pos = exe.run(main, feed={"predict": p, "label": y}, fetch_list=[global_auc, batch_auc, stats[2]],
                            scope=scope)
        all_p = np.concatenate([s[0][:, 1] for s in seen])
        all_y = np.concatenate([s[1].ravel() for s in seen])
        last_p = np.concatenate([s[0][:, 1] for s in seen[-2:]])
        last_y = np.concatenate([s[1].ravel() for s in seen[-2:]])
        assert g.dtype == np.float64 and g.shape == (1,)
        np.testing.assert_allclose(g[0], mann_whitney(all_p, all_y), rtol=1e-12)
        np.testing.assert_allclose(b[0], mann_whitney(last_p, last_y), rtol=1e-12)
        assert pos.sum() == all_y.sum()
    assert 0.5 < g[0] <= 1.0


def test_auc_op_eager_and_edge_cases():
    p, y = batch(10)
    with fluid.dygraph.guard():
        pos = fluid.dygraph.to_variable(np.zeros((1, T + 1), "int64"))
        neg = fluid.dygraph.to_variable(np.zeros((1, T + 1), "int64"))
        out = apply_op("auc", {"Predict": fluid.dygraph.to_variable(p), "Label": fluid.dygraph.to_variable(y),
                               "StatPos": pos, "StatNeg": neg}, {"num_thresholds": T, "slide_steps": 0},
                       {"StatPosOut": pos, "StatNegOut": neg})
        np.testing.assert_allclose(out["AUC"][0].numpy()[0], mann_whitney(p[:, 1], y.ravel()), rtol=1e-12)
        assert int(pos.numpy().sum()) == int(y.sum())
        pos2 = fluid.dygraph.to_variable(np.zeros((1, T + 1), "int64"))
        neg2 = fluid.dygraph.to_variable(np.zeros((1, T + 1), "int64"))
        only_pos = apply_op("auc", {"Predict": fluid.dygraph.to_variable(p),
                                    "Label": fluid.dygraph.to_variable(np.ones_like(y)),
                                    "StatPos": pos2, "StatNeg": neg2},
                            {"num_thresholds": T, "slide_steps": 0}, {"StatPosOut": pos2, "StatNegOut": neg2})
        assert only_pos["AUC"][0].numpy()[0] == 0.0


def test_auc_build_errors():
    good = {"Predict": np.ones((3, 2), "float32"), "Label": np.ones((3, 1), "int64"),
            "StatPos": np.zeros((1, T + 1), "int64"), "StatNeg": np.zeros((1, T + 1), "int64")}
    check_build_error("auc", good, {"num_thresholds": T, "slide_steps": 0, "curve": "PR"}, AttrError)
    check_build_error("auc", good, {"num_thresholds": T + 1, "slide_steps": 0}, ShapeError, match="StatPos")
    check_build_error("auc", {**good, "Label": np.ones((3, 2), "int64")}, {"num_thresholds": T, "slide_steps": 0},
                      ShapeError, match="Label")
