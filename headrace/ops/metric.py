"""The ``auc`` op: area under the ROC curve from bucketed positive/negative counts.

``Predict`` [N, C] (the last column is the positive probability, in [0, 1]), ``Label`` [N, 1]
(int; > 0 is positive).  Each prediction goes to bucket ``int(p * num_thresholds)``.
``StatPos``/``StatNeg`` (int64 [rows, num_thresholds + 1]) are updated in place: with
``slide_steps == 0`` one row accumulates every batch; otherwise the rows hold the last
``slide_steps`` batches (oldest first; each run drops the oldest and appends this batch).  ``AUC``
(float64 [1]) is computed from the sum of the rows, walking the buckets from the highest
threshold down and adding trapezoids, divided by (positives x negatives); 0 when either is 0 —
the reference's kernel.  No gradient.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from .gradrule import NO_GRADIENT
from .registry import register


def _auc_infer(ctx):
    if ctx.attr("curve") != "ROC":
        ctx.fail_attr("curve", "'ROC' (the PR curve is not supported)", ctx.attr("curve"))
    if ctx.attr("num_thresholds") < 1 or ctx.attr("slide_steps") < 0:
        ctx.fail_attr("num_thresholds", "num_thresholds >= 1 and slide_steps >= 0",
                      (ctx.attr("num_thresholds"), ctx.attr("slide_steps")))
    ctx.check_dtype("Predict", (float32, float64))
    predict = ctx.check_rank("Predict", 2)
    ctx.check_dtype("Label", (int32, int64))
    label = ctx.shape("Label")
    if len(label) != 2 or label[1] != 1 or (-1 not in (label[0], predict[0]) and label[0] != predict[0]):
        ctx.fail("Label", f"shape [{predict[0]}, 1] (one label per row of Predict)", str(list(label)))
    rows = max(ctx.attr("slide_steps"), 1)
    for slot in ("StatPos", "StatNeg"):
        ctx.check_dtype(slot, (int64,))
        if tuple(ctx.shape(slot)) != (rows, ctx.attr("num_thresholds") + 1):
            ctx.fail(slot, f"shape [{rows}, {ctx.attr('num_thresholds') + 1}] ([max(slide_steps, 1), "
                           "num_thresholds + 1])", str(list(ctx.shape(slot))))
    ctx.set("AUC", (1,), float64)
    ctx.set("StatPosOut", ctx.shape("StatPos"), int64)
    ctx.set("StatNegOut", ctx.shape("StatNeg"), int64)


def roc_auc(pos, neg) -> float:
    """The reference's trapezoid sum over buckets, highest threshold first."""
    tot_pos = tot_neg = 0.0
    area = 0.0
    for p, n in zip(pos[::-1].tolist(), neg[::-1].tolist()):
        prev_pos, prev_neg = tot_pos, tot_neg
        tot_pos += p
        tot_neg += n
        area += abs(tot_neg - prev_neg) * (tot_pos + prev_pos) / 2.0
    return area / tot_pos / tot_neg if tot_pos > 0 and tot_neg > 0 else 0.0


def _auc_kernel(ins, attrs, ctx):
    predict, label = ins["Predict"][:, -1], ins["Label"].reshape(-1)
    pos, neg = ins["StatPos"], ins["StatNeg"]
    thresholds = attrs["num_thresholds"]
    if predict.size and (predict.min() < 0 or predict.max() > 1):
        raise ValueError(f"auc: predictions must be probabilities in [0, 1], got values in "
                         f"[{predict.min()}, {predict.max()}]")
    buckets = (predict * thresholds).astype(np.int64)
    batch_pos = np.bincount(buckets[label > 0], minlength=thresholds + 1)
    batch_neg = np.bincount(buckets[label <= 0], minlength=thresholds + 1)
    if attrs["slide_steps"] == 0:
        pos[0] += batch_pos
        neg[0] += batch_neg
    else:
        for stat, batch in ((pos, batch_pos), (neg, batch_neg)):
            stat[:-1] = stat[1:].copy()
            stat[-1] = batch
    value = roc_auc(pos.sum(axis=0), neg.sum(axis=0))
    return {"AUC": np.array([value], dtype=np.float64), "StatPosOut": pos, "StatNegOut": neg}


register(
    "auc",
    inputs=["Predict", "Label", "StatPos", "StatNeg"],
    outputs=["AUC", "StatPosOut", "StatNegOut"],
    attrs={"curve": "ROC", "num_thresholds": 4095, "slide_steps": 1},
    infer=_auc_infer,
    kernel=_auc_kernel,
    grad=NO_GRADIENT,
    inplace={"StatPosOut": "StatPos", "StatNegOut": "StatNeg"},
    doc="AUC of the ROC curve from bucketed counts kept in StatPos/StatNeg (updated in place)",
)
