"""The ``auc`` op: area under the ROC curve from bucketed positive/negative counts, with the
reference's state layout.

``Predict`` [N, C] (the last column is the positive probability, in [0, 1]), ``Label`` [N, 1]
(int; > 0 is positive, 0 negative, anything else is skipped).  Each prediction goes to bucket
``int(p * num_thresholds)`` of ``L = num_thresholds + 1``.  ``StatPos``/``StatNeg`` (int64) are
updated in place:

- ``slide_steps == 0``: L counts (shape [1, L] as ``static.auc`` creates them; L + 1 is accepted,
  the last one unused) accumulating every batch;
- ``slide_steps = s > 0``: ``(s + 1) * L + 1`` counts (flat): s rows of per-batch counts used as
  a ring, then their sum, then a batch counter whose value mod s picks the row this batch
  replaces (the sum drops that row's old counts and adds the new ones).

``AUC`` (float64 [1]) walks the summed buckets from the highest threshold down adding trapezoids,
divided by (positives x negatives); 0 when either is 0.  An optional ``InsTagWeight`` whose first
value is 0 marks the batch as fake: it is counted nowhere (the window still advances).  No
gradient.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from .gradrule import NO_GRADIENT
from .registry import optional, register


def _stat_size(attrs_or_ctx_attr):
    thresholds, steps = attrs_or_ctx_attr("num_thresholds"), attrs_or_ctx_attr("slide_steps")
    return (thresholds + 1) if steps == 0 else (steps + 1) * (thresholds + 1) + 1


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
    size = _stat_size(ctx.attr)
    for slot in ("StatPos", "StatNeg"):
        ctx.check_dtype(slot, (int64,))
        got = int(np.prod(ctx.shape(slot)))
        if got != size and not (ctx.attr("slide_steps") == 0 and got == size + 1):   # static.auc's batch
            # states with slide_steps=0 keep the reference's extra (unused) counter slot
            layout = ("num_thresholds + 1" if ctx.attr("slide_steps") == 0
                      else "(slide_steps + 1) * (num_thresholds + 1) + 1")
            ctx.fail(slot, f"{size} counts ({layout})", str(list(ctx.shape(slot))))
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


def _batch_counts(predict, label, thresholds):
    if predict.size and (predict.min() < 0 or predict.max() > 1):
        raise ValueError(f"auc: predictions must be probabilities in [0, 1], got values in "
                         f"[{predict.min()}, {predict.max()}]")
    buckets = (predict * thresholds).astype(np.int64)
    return (np.bincount(buckets[label > 0], minlength=thresholds + 1),
            np.bincount(buckets[label == 0], minlength=thresholds + 1))


def _auc_kernel(ins, attrs, ctx):
    pos, neg = ins["StatPos"], ins["StatNeg"]
    thresholds, steps = attrs["num_thresholds"], attrs["slide_steps"]
    width = thresholds + 1
    weight = ins.get("InsTagWeight")
    fake = weight is not None and weight.size > 0 and weight.reshape(-1)[0] == 0
    batch = _batch_counts(ins["Predict"][:, -1], ins["Label"].reshape(-1), thresholds)
    flats = (pos.reshape(-1), neg.reshape(-1))     # views: the counts are updated in place
    if steps == 0:
        if not fake:
            for flat, counts in zip(flats, batch):
                flat[:width] += counts
        total = tuple(flat[:width] for flat in flats)
    else:
        row = int(flats[0][(steps + 1) * width]) % steps
        for flat, counts in zip(flats, batch):
            window, summed = flat[row * width:(row + 1) * width], flat[steps * width:(steps + 1) * width]
            summed -= window
            window[:] = 0 if fake else counts     # (the reference keeps a fake batch's counts in its row
            summed += window                       # though not in the sum, so reusing the row later skews it)
            flat[(steps + 1) * width] += 1
        total = tuple(flat[steps * width:(steps + 1) * width] for flat in flats)
    value = roc_auc(total[0], total[1])
    return {"AUC": np.array([value], dtype=np.float64), "StatPosOut": pos, "StatNegOut": neg}


register(
    "auc",
    inputs=["Predict", "Label", "StatPos", "StatNeg", optional("InsTagWeight")],
    outputs=["AUC", "StatPosOut", "StatNegOut"],
    attrs={"curve": "ROC", "num_thresholds": 4095, "slide_steps": 1},
    infer=_auc_infer,
    kernel=_auc_kernel,
    grad=NO_GRADIENT,
    inplace={"StatPosOut": "StatPos", "StatNegOut": "StatNeg"},
    doc="AUC of the ROC curve from bucketed counts kept in StatPos/StatNeg (updated in place; the "
        "reference's layout: a ring of slide_steps batches, their sum and a batch counter)",
)
