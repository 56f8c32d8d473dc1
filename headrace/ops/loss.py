"""Losses and metrics: ``cross_entropy``, ``softmax_with_cross_entropy``, ``accuracy``.

Hard labels are int64 class indices with a size-1 class dim; soft labels are distributions of the
scores' shape and dtype.  A hard label outside ``[0, D)`` that is not ``ignore_index`` raises
``IndexError`` at run time (the executor names the op and where it was built); it is never
clamped or wrapped around.  Like the reference, ``-log(p)`` is clamped to at most 1e20, so a zero
probability gives a large finite loss, not ``inf``.

Gradients flow to the scores only (``X`` / ``Logits``), never to labels, soft or hard.  Rows whose
label is ``ignore_index`` get a zero gradient.  ``softmax_with_cross_entropy_grad`` reads
``Softmax``, ``Label`` and ``Loss@GRAD`` (not ``Logits``): ``(Softmax * sum(Label) - Label) * dLoss``
with soft labels (the reference writes ``Softmax - Label``, the same for labels summing to 1; ours
is the exact derivative for any label), ``(Softmax - onehot(Label)) * dLoss`` with hard ones.
With ``use_softmax=False`` (``Softmax`` is a copy of the probabilities) it is the gradient of
``-log p``: ``-dLoss / p`` at the label (hard), ``-dLoss * Label / p`` (soft), as in
``cross_entropy_grad``.  A gradient ``Softmax@GRAD`` (the Softmax output used elsewhere) is not
propagated, as in the reference.  Where a probability is exactly 0 the ``-log`` gradient is
``-inf`` (the reference's division; the forward's 1e20 clamp has no useful slope), except that a
soft label of 0 gives 0 there, the exact derivative of its zero term.

Buffers (``ops/buffers.py``): ``softmax_with_cross_entropy`` may write ``Softmax`` into the
dying ``Logits`` buffer and its gradient ``Logits@GRAD`` into the dying ``Softmax`` buffer
(``inplace``), or into any handed buffer of the right shape and dtype; the arithmetic is the same.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64, int32, int64
from ..core.errors import fmt_shape
from . import parallel
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .infer_helpers import normalize_axes
from .registry import register

FLOATS = (float32, float64)
_TOLERABLE = 1e20   # the reference's stand-in for infinity in -log(p)


# --- shared build-time checks ----------------------------------------------------------------------
def _compatible(a, b) -> bool:
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))


def _match_shape(ctx, slot, want, what):
    """Input ``slot`` must have shape ``want`` (-1 dims match anything); returns the merged shape."""
    got = ctx.shape(slot)
    if not _compatible(want, got):
        ctx.fail(slot, f"shape {fmt_shape(want)} ({what})", fmt_shape(got))
    return tuple(g if w == -1 else w for w, g in zip(want, got))


def _check_label(ctx, scores_slot, axis, soft_label):
    """Check ``Label`` against the scores; returns the scores' shape merged with the label's."""
    shape = ctx.shape(scores_slot)
    if soft_label:
        ctx.check_same_dtype(scores_slot, "Label")
        return _match_shape(ctx, "Label", shape, f"soft labels: the shape of `{scores_slot}`")
    ctx.check_dtype("Label", (int64,))
    want = shape[:axis] + (1,) + shape[axis + 1:]
    merged = _match_shape(ctx, "Label", want, f"hard labels: the shape of `{scores_slot}` with a class dim of 1")
    return merged[:axis] + (shape[axis],) + merged[axis + 1:]


def _check_scores(ctx, slot):
    dtype = ctx.check_dtype(slot, FLOATS)
    shape = ctx.shape(slot)
    if len(shape) < 1:
        ctx.fail(slot, "rank >= 1 (a dim holds the classes)", f"shape {fmt_shape(shape)}")
    return dtype, shape


# --- shared kernel pieces ----------------------------------------------------------------------------
def check_labels(label: np.ndarray, depth: int, ignore_index=None) -> None:
    """Raise IndexError naming the first hard label outside [0, depth) that is not ignore_index."""
    bad = (label < 0) | (label >= depth)
    if ignore_index is not None:
        bad &= label != ignore_index
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        ignoring = f" and is not ignore_index={ignore_index}" if ignore_index is not None else ""
        raise IndexError(f"label {int(label[first])} at index {list(first)} is outside the class range "
                         f"[0, {depth}){ignoring} ({int(bad.sum())} bad label(s) in all)")


def _tolerable_log(p: np.ndarray) -> np.ndarray:
    """log(p) with -inf (p == 0) replaced by -1e20, silently."""
    with np.errstate(divide="ignore"):
        return np.clip(np.log(p), -_TOLERABLE, _TOLERABLE)


def _hard_pick(values, label, axis, ignore_index):
    """values[label] along ``axis`` (label has size 1 there), and the mask of ignored labels."""
    check_labels(label, values.shape[axis], ignore_index)
    ignored = label == ignore_index
    picked = np.take_along_axis(values, np.where(ignored, 0, label), axis=axis)
    return picked, ignored


def _neg_log_grad(p, label, dloss, axis, soft_label, ignore_index):
    """The gradient of ``-log p[label]`` (hard) / ``-sum(label * log p)`` (soft) with respect to
    ``p``, times ``dloss`` (size 1 along ``axis``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if soft_label:
            grad = label * dloss
            np.negative(grad, out=grad)
            np.divide(grad, p, out=grad, where=label != 0)   # a 0 label: a 0 term, a 0 gradient
            return grad
        picked, ignored = _hard_pick(p, label, axis, ignore_index)
        grad = np.zeros_like(p)
        values = np.where(ignored, p.dtype.type(0), -dloss / picked)
        np.put_along_axis(grad, np.where(ignored, 0, label), values.astype(p.dtype, copy=False), axis=axis)
        return grad


def _nll(log_p, label, axis, soft_label, ignore_index):
    """-log p[label] (0 where ignored), or -sum(label * log p) for soft labels, keeping ``axis``."""
    if soft_label:
        return -np.sum(label * log_p, axis=axis, keepdims=True)
    picked, ignored = _hard_pick(log_p, label, axis, ignore_index)
    return np.where(ignored, log_p.dtype.type(0), -picked)


# --- cross_entropy -----------------------------------------------------------------------------------
def _cross_entropy_infer(ctx):
    dtype, shape = _check_scores(ctx, "X")
    merged = _check_label(ctx, "X", len(shape) - 1, ctx.attr("soft_label"))
    ctx.set("Y", merged[:-1] + (1,), dtype)


def _cross_entropy_kernel(ins, attrs, ctx):
    x, label = ins["X"], ins["Label"]
    soft = attrs["soft_label"]
    if soft:
        y = _nll(_tolerable_log(x), label, -1, True, None)
    else:
        picked, ignored = _hard_pick(x, label, -1, attrs["ignore_index"])
        y = np.where(ignored, x.dtype.type(0), -_tolerable_log(picked))
    return {"Y": np.asarray(y, dtype=x.dtype)}




def _cross_entropy_grad_kernel(ins, attrs, ctx):
    if grad_slot("X") not in ctx.wanted:
        return {}
    x = ins["X"]
    grad = _neg_log_grad(x, ins["Label"], ins[grad_slot("Y")], -1, attrs["soft_label"], attrs["ignore_index"])
    return {grad_slot("X"): grad}


register(
    "cross_entropy",
    inputs=["X", "Label"],
    outputs=["Y"],
    attrs={"soft_label": False, "ignore_index": -100},
    infer=_cross_entropy_infer,
    kernel=_cross_entropy_kernel,
    grad=Gradient(_cross_entropy_grad_kernel, inputs=("X", "Label"), output_grads=("Y",), input_grads=("X",),
                  like={grad_slot("X"): "X"}),
    doc="Y = -log(X[..., Label]) for hard labels (0 where Label == ignore_index), or "
        "-sum(Label * log(X), -1) for soft labels; X holds probabilities [..., D], Y is [..., 1]",
)




# --- softmax_with_cross_entropy --------------------------------------------------------------------
def _axis(ctx, rank):
    axis = ctx.attr("axis")
    try:
        return normalize_axes([axis], rank, "axis")[0]
    except ValueError:
        ctx.fail_attr("axis", f"an axis in [-{rank}, {rank}) for Logits of rank {rank}", axis)


def _swce_infer(ctx):
    dtype, shape = _check_scores(ctx, "Logits")
    axis = _axis(ctx, len(shape))
    merged = _check_label(ctx, "Logits", axis, ctx.attr("soft_label"))
    ctx.set("Softmax", merged, dtype)
    ctx.set("Loss", merged[:axis] + (1,) + merged[axis + 1:], dtype)


def _log_softmax(logits, axis, buf=None):
    """(softmax, log_softmax) along ``axis`` via log-sum-exp of the max-shifted logits; the
    softmax goes into ``buf`` when given (it may be ``logits``: read only before)."""
    shifted = logits - np.max(logits, axis=axis, keepdims=True)
    e = np.exp(shifted)
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=buf), shifted - np.log(total)


def _softmax_hard_nll(logits, label, axis, ignore_index, buf):
    """(softmax, -log softmax[label]) for hard labels without forming log_softmax everywhere: the
    label entries are picked from the shifted logits before exp runs in place (the arithmetic of
    ``_log_softmax`` + ``_nll`` at those entries, so the same bits, two full passes fewer).  Rows
    along the last axis go in blocks of about 256K values, which stay in cache between passes; the
    blocks (fixed by the shape alone) run on the intra-op threads, so results do not depend on the
    thread count."""
    check_labels(label, logits.shape[axis], ignore_index)
    probs = np.empty(logits.shape, logits.dtype) if buf is None else buf
    if axis != logits.ndim - 1 or logits.ndim < 2:
        return probs, _softmax_hard_block(logits, label, axis, ignore_index, probs)
    width = logits.shape[-1]
    rows, labels, out = logits.reshape(-1, width), label.reshape(-1, 1), probs.reshape(-1, width)
    step = max(1, (1 << 18) // max(width, 1))
    loss = np.empty(labels.shape, logits.dtype)

    def block(start):
        rows_ = slice(start, start + step)
        loss[rows_] = _softmax_hard_block(rows[rows_], labels[rows_], 1, ignore_index, out[rows_])
    parallel.run_pieces(block, [(start,) for start in range(0, rows.shape[0], step)])
    return probs, loss.reshape(label.shape)


def _softmax_hard_block(logits, label, axis, ignore_index, out):
    shifted = logits - np.max(logits, axis=axis, keepdims=True)
    picked, ignored = _hard_pick(shifted, label, axis, ignore_index)
    e = np.exp(shifted, out=shifted)
    total = np.sum(e, axis=axis, keepdims=True)
    np.divide(e, total, out=out)
    return np.where(ignored, logits.dtype.type(0), -(picked - np.log(total)))


def _swce_kernel(ins, attrs, ctx):
    logits, label = ins["Logits"], ins["Label"]
    axis = attrs["axis"] % logits.ndim
    if attrs["use_softmax"] and not attrs["soft_label"]:
        probs, loss = _softmax_hard_nll(logits, label, axis, attrs["ignore_index"],
                                        ctx.buffer("Softmax", logits.shape, logits.dtype))
        return {"Softmax": probs, "Loss": np.asarray(loss, dtype=logits.dtype)}
    if attrs["use_softmax"]:
        probs, log_p = _log_softmax(logits, axis, ctx.buffer("Softmax", logits.shape, logits.dtype))
    else:
        probs, log_p = logits.copy(), _tolerable_log(logits)
    loss = _nll(log_p, label, axis, attrs["soft_label"], attrs["ignore_index"])
    return {"Softmax": probs, "Loss": np.asarray(loss, dtype=logits.dtype)}




def _swce_grad_kernel(ins, attrs, ctx):
    if grad_slot("Logits") not in ctx.wanted:
        return {}
    softmax, label, dloss = ins["Softmax"], ins["Label"], ins[grad_slot("Loss")]
    buf = ctx.buffer(grad_slot("Logits"), softmax.shape, softmax.dtype)  # may be Softmax: read first
    axis = attrs["axis"] % softmax.ndim
    soft, ignore_index = attrs["soft_label"], attrs["ignore_index"]
    if not attrs["use_softmax"]:
        return {grad_slot("Logits"): _neg_log_grad(softmax, label, dloss, axis, soft, ignore_index)}
    if soft:
        grad = np.multiply(softmax, np.sum(label, axis=axis, keepdims=True) * dloss, out=buf)
        grad -= label * dloss
        return {grad_slot("Logits"): grad}
    check_labels(label, softmax.shape[axis], ignore_index)
    ignored = label == ignore_index
    if ignored.any():
        dloss = np.where(ignored, dloss.dtype.type(0), dloss)
        label = np.where(ignored, 0, label)
    grad = parallel.chunked(np.multiply, np.empty(softmax.shape, softmax.dtype) if buf is None else buf,
                            softmax, dloss)
    picked = np.take_along_axis(grad, label, axis=axis)
    picked -= dloss
    np.put_along_axis(grad, label, picked, axis=axis)
    return {grad_slot("Logits"): grad}


register(
    "softmax_with_cross_entropy",
    inputs=["Logits", "Label"],
    outputs=["Softmax", "Loss"],
    attrs={"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True,
           "use_softmax": True, "axis": -1},
    infer=_swce_infer,
    kernel=_swce_kernel,
    buffers=True,
    grad=Gradient(_swce_grad_kernel, inputs=("Label",), outputs=("Softmax",), output_grads=("Loss",),
                  input_grads=("Logits",), like={grad_slot("Logits"): "Softmax"},
                  inplace={grad_slot("Logits"): "Softmax"}, buffers=True),
    inplace={"Softmax": "Logits"},
    doc="Softmax = softmax(Logits) along `axis`; Loss = cross entropy of Softmax and Label, computed "
        "from log-sum-exp (always numerically stable: `numeric_stable_mode` is accepted for "
        "compatibility). use_softmax=False: Logits already are probabilities (Softmax = a copy).",
)




# --- accuracy --------------------------------------------------------------------------------------
def _accuracy_infer(ctx):
    ctx.check_dtype("Out", FLOATS)
    shape = ctx.check_rank("Out", 2)
    _check_label(ctx, "Out", 1, soft_label=False)
    k, depth = ctx.attr("k"), shape[1]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or (depth != -1 and k > depth):
        ctx.fail_attr("k", f"an integer in [1, {depth if depth != -1 else 'D'}] (D = {depth} classes)", k)
    ctx.set("Accuracy", (), float32)
    ctx.set("Correct", (), int32)
    ctx.set("Total", (), int32)


def _accuracy_kernel(ins, attrs, ctx):
    """A row is correct when fewer than k scores rank ahead of its label's score, where j ranks
    ahead of the label l if score_j > score_l, or score_j == score_l and j < l (a stable descending
    sort); no sort is needed."""
    scores, label = ins["Out"], ins["Label"]
    n, depth = scores.shape
    check_labels(label, depth)
    target = np.take_along_axis(scores, label, axis=1)
    columns = np.arange(depth)
    ahead = (scores > target) | ((scores == target) & (columns < label))
    correct = int(np.count_nonzero(np.sum(ahead, axis=1) < attrs["k"]))
    accuracy = correct / n if n else 0.0
    return {"Accuracy": np.asarray(accuracy, dtype=np.float32),
            "Correct": np.asarray(correct, dtype=np.int32),
            "Total": np.asarray(n, dtype=np.int32)}


register(
    "accuracy",
    inputs=["Out", "Label"],
    outputs=["Accuracy", "Correct", "Total"],
    attrs={"k": 1},
    infer=_accuracy_infer,
    kernel=_accuracy_kernel,
    grad=NO_GRADIENT,
    doc="Top-k accuracy of scores Out [N, D] against int64 Label [N, 1]: a row is correct when its "
        "label is among the k highest scores (ties: lower index first, a stable descending sort). "
        "Accuracy = Correct / Total (0 for an empty batch), all 0-D. headrace folds the reference's "
        "top_k + accuracy op pair into this one op: Out holds all D scores, not the top-k values.",
)

