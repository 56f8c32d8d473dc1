"""bce_loss, sigmoid_cross_entropy_with_logits, huber_loss, kldiv_loss, nll_loss, label_smooth:
forward against NumPy references written here (static, exact and -1 batch shapes; eager), gradients
against float64 central differences, build-time errors."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core import context
from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops.apply import apply_op
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(11)


def _probs(shape):
    return rng.uniform(0.05, 0.95, shape)


def _bce_ref(ins, attrs):
    x, y = ins["X"], ins["Label"]
    with np.errstate(divide="ignore"):
        return {"Out": -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log(1 - x), -100))}


def _sce_ref(ins, attrs):
    x, y = ins["X"], ins["Label"]
    out = np.log(1 + np.exp(x)) - x * y                  # log(1 + e^x) - x y, the same function
    keep = y != attrs.get("ignore_index", -100)
    out = np.where(keep, out, 0.0)
    if attrs.get("normalize"):
        out = out / max(keep.sum(), 1)
    return {"Out": out}


def _huber_ref(ins, attrs):
    d = attrs.get("delta", 1.0)
    r = ins["Y"] - ins["X"]
    return {"Out": np.where(np.abs(r) <= d, 0.5 * r * r, d * np.abs(r) - 0.5 * d * d), "Residual": r}


def _kldiv_ref(ins, attrs):
    x, t = ins["X"], ins["Target"]
    if attrs.get("log_target"):
        loss = np.exp(t) * (t - x)
    else:
        loss = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1.0)) - x), 0.0)
    red = attrs.get("reduction", "mean")
    value = {"none": loss, "sum": loss.sum(), "mean": loss.mean(), "batchmean": loss.sum() / x.shape[0]}[red]
    return {"Loss": np.asarray(value)}


def _nll_ref(ins, attrs):
    x, label = ins["X"], ins["Label"]
    w = ins.get("Weight", np.ones(x.shape[1]))
    ignore = attrs.get("ignore_index", -100)
    losses, weights = np.zeros(label.shape), np.zeros(label.shape)
    for idx in np.ndindex(label.shape):
        c = label[idx]
        if c != ignore:
            weights[idx] = w[c]
            losses[idx] = -w[c] * x[(idx[0], c) + idx[1:]]
    red = attrs.get("reduction", "mean")
    out = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / weights.sum()}[red]
    return {"Out": np.asarray(out), "Total_weight": np.asarray(weights.sum())}


def _smooth_ref(ins, attrs):
    eps = attrs.get("epsilon", 0.0)
    prior = ins.get("PriorDist")
    prior = np.full(ins["X"].shape[-1], 1.0 / ins["X"].shape[-1]) if prior is None else prior.reshape(-1)
    return {"Out": (1 - eps) * ins["X"] + eps * prior}


_labels3 = np.array([0, 2, -100, 1, 2], "int64")
_labels4 = rng.integers(0, 3, (2, 4, 5)).astype("int64")
_labels4[0, 1, 2] = 1
CASES = [
    Case("bce_loss", {"X": _probs((4, 3)), "Label": rng.uniform(0, 1, (4, 3))}, _bce_ref, rtol=1e-12),
    Case("bce_loss", {"X": np.array([0.0, 1.0, 0.5]), "Label": np.array([1.0, 0.0, 1.0])}, _bce_ref,
         id="bce_clamped", rtol=1e-12),
    Case("sigmoid_cross_entropy_with_logits", {"X": rng.normal(size=(4, 3)), "Label": rng.uniform(0, 1, (4, 3))},
         _sce_ref, rtol=1e-12),
    Case("sigmoid_cross_entropy_with_logits", {"X": rng.normal(size=(3, 2)), "Label": np.array(
        [[1.0, -100.0], [0.0, 1.0], [-100.0, 0.5]])}, _sce_ref, attrs={"normalize": True}, id="sce_ignore_norm",
         rtol=1e-12),
    Case("huber_loss", {"X": rng.normal(size=(5, 2)) * 2, "Y": rng.normal(size=(5, 2))}, _huber_ref,
         attrs={"delta": 0.7}, rtol=1e-12),
    *[Case("kldiv_loss", {"X": np.log(_probs((3, 4))), "Target": np.where(rng.uniform(size=(3, 4)) < 0.2, 0.0,
                                                                           _probs((3, 4)))},
           _kldiv_ref, attrs={"reduction": r}, id=f"kldiv_{r}", rtol=1e-12, batch_slots=())
      for r in ("none", "sum", "mean", "batchmean")],
    Case("kldiv_loss", {"X": rng.normal(size=(3, 4)), "Target": rng.normal(size=(3, 4))}, _kldiv_ref,
         attrs={"reduction": "none", "log_target": True}, id="kldiv_log_target", rtol=1e-12),
    *[Case("nll_loss", {"X": np.log(_probs((5, 3))), "Label": _labels3, "Weight": np.array([0.5, 2.0, 1.0])},
           _nll_ref, attrs={"reduction": r}, id=f"nll_{r}", rtol=1e-12, batch_slots=("X", "Label"))
      for r in ("none", "sum", "mean")],
    Case("nll_loss", {"X": np.log(_probs((2, 3, 4, 5))), "Label": _labels4}, _nll_ref,
         attrs={"ignore_index": 1}, id="nll_4d_ignore", rtol=1e-12, batch_slots=()),
    Case("label_smooth", {"X": np.eye(4)[[0, 3, 1]]}, _smooth_ref, attrs={"epsilon": 0.1}, rtol=1e-12),
    Case("label_smooth", {"X": np.eye(3)[[0, 2]], "PriorDist": np.array([[0.2, 0.3, 0.5]])}, _smooth_ref,
         attrs={"epsilon": 0.3}, id="smooth_prior", rtol=1e-12, batch_slots=("X",)),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)
    check_infer_batch(case)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward_eager(case):
    with context.static_mode_guard(False):
        ins = {k: paddle.to_tensor(v) for k, v in case.inputs.items()}
        outs = apply_op(case.op, ins, case.attrs)
    for slot, want in case.reference(case.inputs, case.attrs).items():
        np.testing.assert_allclose(outs[slot][0].numpy(), want, rtol=case.rtol, err_msg=slot)


GRADS = [
    ("bce_loss", {"X": _probs((3, 4)), "Label": rng.uniform(0, 1, (3, 4))}, {}),
    ("sigmoid_cross_entropy_with_logits", {"X": rng.normal(size=(3, 4)), "Label": rng.uniform(0, 1, (3, 4))}, {}),
    ("sigmoid_cross_entropy_with_logits", {"X": rng.normal(size=(3, 2)), "Label": np.array(
        [[1.0, -100.0], [0.0, 1.0], [-100.0, 0.5]])}, {"normalize": True}),
    ("huber_loss", {"X": np.array([[0.1, 2.0, -3.0], [0.5, -0.2, 1.5]]), "Y": np.zeros((2, 3))}, {"delta": 1.0}),
    ("kldiv_loss", {"X": rng.normal(size=(3, 4)), "Target": np.where(rng.uniform(size=(3, 4)) < 0.3, 0.0,
                                                                      _probs((3, 4)))}, {"reduction": "batchmean"}),
    ("kldiv_loss", {"X": rng.normal(size=(3, 4)), "Target": rng.normal(size=(3, 4))},
     {"reduction": "mean", "log_target": True}),
    ("kldiv_loss", {"X": rng.normal(size=(2, 3)), "Target": _probs((2, 3))}, {"reduction": "none"}),
    ("nll_loss", {"X": rng.normal(size=(5, 3)), "Label": _labels3, "Weight": np.array([0.5, 2.0, 1.0])},
     {"reduction": "mean"}),
    ("nll_loss", {"X": rng.normal(size=(2, 3, 4, 5)), "Label": _labels4}, {"reduction": "none", "ignore_index": 1}),
    ("nll_loss", {"X": rng.normal(size=(4, 3)), "Label": np.array([0, 2, 2, 1], "int64")}, {"reduction": "sum"}),
    ("label_smooth", {"X": rng.uniform(size=(3, 4))}, {"epsilon": 0.2}),
]


@pytest.mark.parametrize("op,inputs,attrs", GRADS, ids=[f"{g[0]}-{i}" for i, g in enumerate(GRADS)])
def test_gradients(op, inputs, attrs):
    wrt = ("X", "Y") if op == "huber_loss" else ("X",)
    check_grad(op, inputs, attrs, wrt=wrt, batch_unknown=op not in ("kldiv_loss", "nll_loss"))


def test_huber_gradient_at_the_kink_uses_the_clipped_residual():
    """At |r| == delta both branches have slope delta: the gradient is continuous there."""
    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.array([1.0, -1.0, 0.5]), stop_gradient=False)
        out = apply_op("huber_loss", {"X": x, "Y": paddle.to_tensor(np.zeros(3))}, {"delta": 1.0})["Out"][0]
        paddle.sum(out).backward()
        np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.5])


def test_nll_bad_label_is_an_index_error():
    with context.static_mode_guard(False), pytest.raises(IndexError, match="outside the class range"):
        apply_op("nll_loss", {"X": paddle.to_tensor(np.zeros((2, 3))),
                              "Label": paddle.to_tensor(np.array([0, 3], "int64"))}, {})


def test_build_errors():
    x = np.zeros((2, 3))
    check_build_error("bce_loss", {"X": x, "Label": np.zeros((2, 4))}, {}, ShapeError, match="Label")
    check_build_error("bce_loss", {"X": x.astype("int64"), "Label": x.astype("int64")}, {}, DTypeError)
    check_build_error("huber_loss", {"X": x, "Y": x}, {"delta": 0.0}, AttrError, match="delta")
    check_build_error("kldiv_loss", {"X": x, "Target": x}, {"reduction": "avg"}, AttrError, match="reduction")
    check_build_error("nll_loss", {"X": x, "Label": np.zeros((3,), "int64")}, {}, ShapeError, match="Label")
    check_build_error("nll_loss", {"X": x, "Label": np.zeros((2,), "int64"), "Weight": np.ones(4)}, {},
                      ShapeError, match="Weight")
    check_build_error("label_smooth", {"X": x}, {"epsilon": 1.5}, AttrError, match="epsilon")
    check_build_error("label_smooth", {"X": x, "PriorDist": np.ones(4)}, {"epsilon": 0.1}, ShapeError)
