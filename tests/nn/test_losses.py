"""paddle.nn.functional losses and similarity functions and their Layer classes: each against a
NumPy reference written here, in static and eager mode, and (float64) eager gradients against
central differences of the same function."""
import math

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.nn.functional as F
from headrace.core import context
from tests.helpers import build_and_run

rng = np.random.default_rng(21)


def _both_modes(fn, feeds, want, rtol=1e-10, atol=1e-12):
    (got,), _ = build_and_run(fn, feeds)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg="static")
    with context.static_mode_guard(False):
        got = fn(**{k: paddle.to_tensor(v) for k, v in feeds.items()}).numpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg="eager")


def _eager_gradcheck(fn, feeds, wrt, eps=1e-6, rtol=1e-5, atol=1e-8):
    weights = None

    def value(arrays):
        with context.static_mode_guard(False):
            out = fn(**{k: paddle.to_tensor(v) for k, v in arrays.items()}).numpy()
        return float(np.sum(out * weights))
    with context.static_mode_guard(False):
        tensors = {k: paddle.to_tensor(v, stop_gradient=k not in wrt) for k, v in feeds.items()}
        out = fn(**tensors)
        weights = rng.uniform(0.5, 1.5, out.shape)
        paddle.sum(out * paddle.to_tensor(weights)).backward()
    for k in wrt:
        numeric = np.zeros_like(feeds[k])
        for idx in np.ndindex(feeds[k].shape):
            plus, minus = dict(feeds), dict(feeds)
            plus[k], minus[k] = feeds[k].copy(), feeds[k].copy()
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (value(plus) - value(minus)) / (2 * eps)
        np.testing.assert_allclose(tensors[k].grad.numpy(), numeric, rtol=rtol, atol=atol, err_msg=k)


def _red(loss, reduction):
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def _log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


X = rng.normal(size=(4, 3))
Y = rng.normal(size=(4, 3))
P = rng.uniform(0.05, 0.95, (4, 3))
T = rng.uniform(0, 1, (4, 3))
SIGN = np.array([1.0, -1.0, 1.0, -1.0])
CASES = {
    "mse": (lambda x, y: F.mse_loss(x, y), {"x": X, "y": Y}, lambda f: ((f["x"] - f["y"]) ** 2).mean(), ["x", "y"]),
    "l1_sum": (lambda x, y: F.l1_loss(x, y, reduction="sum"), {"x": X, "y": Y},
               lambda f: np.abs(f["x"] - f["y"]).sum(), ["x"]),
    "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y, delta=0.5, reduction="none"), {"x": X, "y": Y},
                  lambda f: np.where(np.abs(f["x"] - f["y"]) < 0.5, 0.5 * (f["x"] - f["y"]) ** 2,
                                     0.5 * np.abs(f["x"] - f["y"]) - 0.125), ["x", "y"]),
    "bce_weight": (lambda p, t, w: F.binary_cross_entropy(p, t, weight=w), {"p": P, "t": T, "w": rng.uniform(size=3)},
                   lambda f: (-(f["t"] * np.log(f["p"]) + (1 - f["t"]) * np.log(1 - f["p"])) * f["w"]).mean(), ["p"]),
    "bce_logits_pos_weight": (
        lambda x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="sum"),
        {"x": X, "t": T, "pw": np.array([1.0, 2.0, 0.5])},
        lambda f: ((-(f["t"] * np.log(_sigmoid(f["x"])) + (1 - f["t"]) * np.log(1 - _sigmoid(f["x"]))))
                   * (f["t"] * (f["pw"] - 1) + 1)).sum(), ["x"]),
    "nll": (lambda x, y, w: F.nll_loss(x, y, weight=w), {"x": _log_softmax(X), "y": np.array([0, 2, 1, 2], "int64"),
                                                         "w": np.array([1.0, 0.5, 2.0])},
            lambda f: -sum(f["w"][c] * f["x"][i, c] for i, c in enumerate(f["y"])) / sum(f["w"][f["y"]]), ["x"]),
    "kl_div_batchmean": (lambda x, t: F.kl_div(x, t, reduction="batchmean"), {"x": _log_softmax(X), "t": P},
                         lambda f: (f["t"] * (np.log(f["t"]) - f["x"])).sum() / 4, ["x"]),
    "margin_ranking": (lambda a, b, s: F.margin_ranking_loss(a, b, s, margin=0.3), {"a": X[:, 0], "b": Y[:, 0], "s": SIGN},
                       lambda f: np.maximum(0, -f["s"] * (f["a"] - f["b"]) + 0.3).mean(), ["a", "b"]),
    "hinge_embedding": (lambda x, s: F.hinge_embedding_loss(x, s, margin=0.5, reduction="none"),
                        {"x": X[:, 0], "s": SIGN},
                        lambda f: np.where(f["s"] == 1, f["x"], np.maximum(0, 0.5 - f["x"])), ["x"]),
    "cosine_embedding": (
        lambda a, b, s: F.cosine_embedding_loss(a, b, s, margin=0.1), {"a": X, "b": Y, "s": SIGN},
        lambda f: np.where(f["s"] == 1, 1 - _cos(f["a"], f["b"]), np.maximum(0, _cos(f["a"], f["b"]) - 0.1)).mean(),
        ["a", "b"]),
    "soft_margin": (lambda x, s: F.soft_margin_loss(x, s), {"x": X[:, 0], "s": SIGN},
                    lambda f: np.log(1 + np.exp(-f["s"] * f["x"])).mean(), ["x"]),
    "multi_label_soft_margin": (
        lambda x, t, w: F.multi_label_soft_margin_loss(x, t, weight=w), {"x": X, "t": (T > 0.5) * 1.0, "w": np.array([1.0, 2.0, 0.5])},
        lambda f: (-(f["t"] * np.log(_sigmoid(f["x"])) + (1 - f["t"]) * np.log(_sigmoid(-f["x"]))) * f["w"]).mean(-1).mean(),
        ["x"]),
    "triplet_margin": (lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction="sum"),
                       {"a": X, "p": Y, "n": P},
                       lambda f: np.maximum(0, np.abs(f["a"] - f["p"] + 1e-6).sum(-1) - np.minimum(
                           np.abs(f["a"] - f["n"] + 1e-6).sum(-1), np.abs(f["p"] - f["n"] + 1e-6).sum(-1)) + 2.0).sum(),
                       ["a", "p", "n"]),
    "poisson_nll_full": (lambda x, t: F.poisson_nll_loss(x, t, full=True), {"x": X, "t": T * 3},
                         lambda f: (np.exp(f["x"]) - f["t"] * f["x"] + np.where(
                             f["t"] > 1, f["t"] * np.log(f["t"]) - f["t"] + 0.5 * np.log(2 * np.pi * f["t"]), 0)).mean(),
                         ["x"]),
    "poisson_nll_no_log": (lambda x, t: F.poisson_nll_loss(x, t, log_input=False, reduction="sum"), {"x": P, "t": T},
                           lambda f: (f["x"] - f["t"] * np.log(f["x"] + 1e-8)).sum(), ["x"]),
    "gaussian_nll": (lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True), {"x": X, "t": Y, "v": P},
                     lambda f: (0.5 * (np.log(f["v"]) + (f["x"] - f["t"]) ** 2 / f["v"]) + 0.5 * np.log(2 * np.pi)).mean(),
                     ["x", "t", "v"]),
    "sigmoid_focal": (lambda x, t: F.sigmoid_focal_loss(x, t, alpha=0.3, gamma=1.5), {"x": X, "t": (T > 0.5) * 1.0},
                      lambda f: _focal(f["x"], f["t"], 0.3, 1.5).sum(), ["x"]),
    "log_loss": (lambda p, t: F.log_loss(p, t), {"p": P, "t": T},
                 lambda f: -f["t"] * np.log(f["p"] + 1e-4) - (1 - f["t"]) * np.log(1 - f["p"] + 1e-4), ["p"]),
    "square_error_cost": (lambda x, y: F.square_error_cost(x, y), {"x": X, "y": Y}, lambda f: (f["x"] - f["y"]) ** 2,
                          ["x"]),
    "normalize_p3_axis0": (lambda x: F.normalize(x, p=3, axis=0), {"x": X},
                           lambda f: f["x"] / (np.abs(f["x"]) ** 3).sum(0, keepdims=True) ** (1 / 3), ["x"]),
    "normalize": (lambda x: F.normalize(x), {"x": X}, lambda f: f["x"] / np.linalg.norm(f["x"], axis=1, keepdims=True),
                  ["x"]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, axis=1), {"a": X, "b": Y},
                          lambda f: _cos(f["a"], f["b"]), ["a", "b"]),
    "pairwise_distance": (lambda a, b: F.pairwise_distance(a, b, keepdim=True), {"a": X, "b": Y},
                          lambda f: np.linalg.norm(f["a"] - f["b"] + 1e-6, axis=-1, keepdims=True), ["a", "b"]),
    "pairwise_distance_inf": (lambda a, b: F.pairwise_distance(a, b, p=math.inf), {"a": X, "b": Y},
                              lambda f: np.abs(f["a"] - f["b"] + 1e-6).max(-1), ["a"]),
    "label_smooth": (lambda y: F.label_smooth(y, epsilon=0.2), {"y": np.eye(3)[[0, 2, 1]]},
                     lambda f: f["y"] * 0.8 + 0.2 / 3, ["y"]),
    "dice": (lambda p, y: F.dice_loss(p, y), {"p": np.exp(_log_softmax(X)), "y": np.array([[0], [2], [1], [1]], "int64")},
             lambda f: _dice(f["p"], f["y"]), ["p"]),
}


def _cos(a, b):
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def _focal(x, t, alpha, gamma):
    p = _sigmoid(x)
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    p_t = p * t + (1 - p) * (1 - t)
    return (alpha * t + (1 - alpha) * (1 - t)) * ce * (1 - p_t) ** gamma


def _dice(p, y):
    onehot = np.eye(p.shape[-1])[y[:, 0]]
    inse = (p * onehot).sum(-1)
    return (1 - 2 * inse / (p.sum(-1) + onehot.sum(-1) + 1e-5)).mean()


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_both_modes(name):
    fn, feeds, ref, _ = CASES[name]
    _both_modes(fn, feeds, ref(feeds))


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_gradient(name):
    fn, feeds, _, wrt = CASES[name]
    _eager_gradcheck(fn, feeds, wrt)


# --- cross_entropy: weight, label smoothing, soft labels, axis -------------------------------------------
LOGITS = rng.normal(size=(5, 4))
HARD = np.array([0, 3, 1, 2, 3], "int64")
W = np.array([0.5, 1.0, 2.0, 1.5])


def _ce_ref(x, label, weight=None, ignore=-100, reduction="mean", soft=False, smoothing=0.0, axis=-1):
    """The reference's cross_entropy written out in NumPy (axis moved last)."""
    x = np.moveaxis(x, axis, -1)
    logp = _log_softmax(x)
    classes = x.shape[-1]
    if smoothing > 0:
        if not soft:
            label = np.eye(classes)[np.where(label == ignore, 0, label)] * (label != ignore)[..., None]
        label, soft = label * (1 - smoothing) + smoothing / classes, True
    if soft:
        label = np.moveaxis(label, axis, -1) if label.ndim == x.ndim and smoothing == 0 else label
        loss = -(label * logp).sum(-1)
        w = (label * weight).sum(-1) if weight is not None else None
    else:
        keep = label != ignore
        safe = np.where(keep, label, 0)
        loss = np.where(keep, -np.take_along_axis(logp, safe[..., None], -1)[..., 0], 0.0)
        w = np.where(keep, weight[safe], 0.0) if weight is not None else None
    if w is not None:
        loss = loss * w
    if reduction == "none":
        return loss[..., None] if soft else loss          # soft labels keep the class dim (size 1)
    if reduction == "sum":
        return loss.sum()
    if not soft and ignore >= 0:
        den = (label != ignore).sum() if w is None else w.sum()
        return loss.sum() / (den if den != 0 else 1)
    return loss.sum() / w.sum() if w is not None else loss.mean()


CE_CASES = {
    "weight_mean": (dict(weight=W), {}),
    "weight_ignore_mean": (dict(weight=W, ignore_index=3), dict(ignore=3)),
    "weight_sum": (dict(weight=W, reduction="sum"), dict(reduction="sum")),
    "weight_none": (dict(weight=W, reduction="none"), dict(reduction="none")),
    "smoothing": (dict(label_smoothing=0.1), dict(smoothing=0.1)),
    "smoothing_weight": (dict(label_smoothing=0.2, weight=W), dict(smoothing=0.2)),
    "smoothing_none": (dict(label_smoothing=0.2, reduction="none"), dict(smoothing=0.2, reduction="none")),
}


@pytest.mark.parametrize("name", sorted(CE_CASES))
def test_cross_entropy_options(name):
    kw, ref_kw = CE_CASES[name]
    weight = kw.pop("weight", None)
    feeds = {"x": LOGITS, "y": HARD}
    if weight is not None:
        feeds["w"] = weight

    def fn(x, y, w=None):
        return F.cross_entropy(x, y, weight=w, **kw)
    want = _ce_ref(LOGITS, HARD, weight=weight, **ref_kw)
    _both_modes(fn, feeds, want)
    _eager_gradcheck(fn, feeds, ["x"])
    kw["weight"] = weight


def test_cross_entropy_soft_labels_with_weight_and_axis():
    x = rng.normal(size=(2, 3, 4))                       # classes on axis 1
    soft = rng.dirichlet(np.ones(3), size=(2, 4)).transpose(0, 2, 1)
    feeds = {"x": x, "y": soft, "w": W[:3]}

    def fn(x, y, w):
        return F.cross_entropy(x, y, weight=w, soft_label=True, axis=1)
    xm, ym = np.moveaxis(x, 1, -1), np.moveaxis(soft, 1, -1)
    loss = -(ym * _log_softmax(xm)).sum(-1) * (ym * W[:3]).sum(-1)
    _both_modes(fn, feeds, loss.sum() / (ym * W[:3]).sum())
    _eager_gradcheck(fn, feeds, ["x"])


def test_cross_entropy_hard_labels_on_axis_1_with_weight():
    x = rng.normal(size=(2, 3, 4))
    label = rng.integers(0, 3, (2, 4)).astype("int64")

    def fn(x, y, w):
        return F.cross_entropy(x, y, weight=w, axis=1, reduction="none")
    want = _ce_ref(x, label, weight=W[:3], reduction="none", axis=1)
    _both_modes(fn, {"x": x, "y": label, "w": W[:3]}, want)


# --- layer classes ---------------------------------------------------------------------------------------
LAYERS = [
    (lambda: paddle.nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1),
     lambda: F.cross_entropy(*_t(LOGITS, HARD), reduction="sum", label_smoothing=0.1), (LOGITS, HARD)),
    (lambda: paddle.nn.MSELoss("sum"), lambda: F.mse_loss(*_t(X, Y), "sum"), (X, Y)),
    (lambda: paddle.nn.L1Loss(), lambda: F.l1_loss(*_t(X, Y)), (X, Y)),
    (lambda: paddle.nn.SmoothL1Loss(delta=0.3), lambda: F.smooth_l1_loss(*_t(X, Y), delta=0.3), (X, Y)),
    (lambda: paddle.nn.BCELoss(), lambda: F.binary_cross_entropy(*_t(P, T)), (P, T)),
    (lambda: paddle.nn.BCEWithLogitsLoss(pos_weight=paddle.to_tensor(W[:3])),
     lambda: F.binary_cross_entropy_with_logits(*_t(X, T), pos_weight=paddle.to_tensor(W[:3])), (X, T)),
    (lambda: paddle.nn.NLLLoss(ignore_index=1), lambda: F.nll_loss(*_t(LOGITS, HARD), ignore_index=1), (LOGITS, HARD)),
    (lambda: paddle.nn.KLDivLoss("sum", log_target=True), lambda: F.kl_div(*_t(X, Y), "sum", log_target=True), (X, Y)),
    (lambda: paddle.nn.MarginRankingLoss(0.2), lambda: F.margin_ranking_loss(*_t(X[:, 0], Y[:, 0], SIGN), 0.2),
     (X[:, 0], Y[:, 0], SIGN)),
    (lambda: paddle.nn.HingeEmbeddingLoss(), lambda: F.hinge_embedding_loss(*_t(X[:, 0], SIGN)), (X[:, 0], SIGN)),
    (lambda: paddle.nn.CosineEmbeddingLoss(0.2), lambda: F.cosine_embedding_loss(*_t(X, Y, SIGN), 0.2), (X, Y, SIGN)),
    (lambda: paddle.nn.SoftMarginLoss(), lambda: F.soft_margin_loss(*_t(X[:, 0], SIGN)), (X[:, 0], SIGN)),
    (lambda: paddle.nn.MultiLabelSoftMarginLoss(), lambda: F.multi_label_soft_margin_loss(*_t(X, T)), (X, T)),
    (lambda: paddle.nn.TripletMarginLoss(p=3.0), lambda: F.triplet_margin_loss(*_t(X, Y, P), p=3.0), (X, Y, P)),
    (lambda: paddle.nn.PoissonNLLLoss(), lambda: F.poisson_nll_loss(*_t(X, T)), (X, T)),
    (lambda: paddle.nn.GaussianNLLLoss(), lambda: F.gaussian_nll_loss(*_t(X, Y, P)), (X, Y, P)),
    (lambda: paddle.nn.CosineSimilarity(axis=0), lambda: F.cosine_similarity(*_t(X, Y), axis=0), (X, Y)),
    (lambda: paddle.nn.PairwiseDistance(p=1.0), lambda: F.pairwise_distance(*_t(X, Y), p=1.0), (X, Y)),
]


def _t(*arrays):
    return [paddle.to_tensor(a) for a in arrays]


@pytest.mark.parametrize("make,functional,inputs", LAYERS, ids=[str(i) for i in range(len(LAYERS))])
def test_layer_class_calls_its_functional_form(make, functional, inputs):
    with context.static_mode_guard(False):
        layer = make()
        np.testing.assert_array_equal(layer(*_t(*inputs)).numpy(), functional().numpy())
        with pytest.raises(TypeError, match="inputs"):
            layer(*_t(*inputs[:1]))


def test_layer_argument_errors():
    with pytest.raises(TypeError, match="unexpected keyword"):
        paddle.nn.MSELoss(delta=1.0)
    with pytest.raises(ValueError, match="reduction must be"):
        F.mse_loss(paddle.to_tensor(X), paddle.to_tensor(Y), reduction="avg")
    with pytest.raises(ValueError, match="reduction must be"):
        F.kl_div(paddle.to_tensor(X), paddle.to_tensor(Y), reduction="avg")


# --- multi_margin_loss, triplet_margin_with_distance_loss, npair_loss --------------------------------
def _multi_margin_ref(x, y, p, margin, w):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != y[i]:
                out[i] += max(0.0, w[y[i]] * (margin - x[i, y[i]] + x[i, j])) ** p
    return out / c


def _npair_ref(a, p, labels, l2_reg):
    same = (labels[:, None] == labels[None, :]).astype(float)
    targets = same / same.sum(1, keepdims=True)
    l2 = (a * a).sum(1).mean() + (p * p).sum(1).mean()
    ce = -(targets * _log_softmax(a @ p.T)).sum(1, keepdims=True)
    return l2 * 0.25 * l2_reg + (targets * ce).sum(0).mean()


MORE = {
    "multi_margin_p2_weight": (lambda x, y, w: F.multi_margin_loss(x, y, p=2, margin=0.7, weight=w, reduction="none"),
                               {"x": LOGITS, "y": HARD, "w": W}, lambda f: _multi_margin_ref(f["x"], f["y"], 2, 0.7, f["w"]),
                               ["x"]),
    "multi_margin": (lambda x, y: F.multi_margin_loss(x, y), {"x": LOGITS, "y": HARD},
                     lambda f: _multi_margin_ref(f["x"], f["y"], 1, 1.0, np.ones(4)).mean(), ["x"]),
    "triplet_distance_swap": (lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=2.0, swap=True),
                              {"a": X, "p": Y, "n": P},
                              lambda f: np.maximum(0, np.linalg.norm(f["a"] - f["p"] + 1e-6, axis=-1) - np.minimum(
                                  np.linalg.norm(f["a"] - f["n"] + 1e-6, axis=-1),
                                  np.linalg.norm(f["p"] - f["n"] + 1e-6, axis=-1)) + 2.0).mean(), ["a", "p", "n"]),
    "triplet_distance_fn": (lambda a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v), reduction="sum"),
        {"a": X, "p": Y, "n": P},
        lambda f: np.maximum(0, (1 - _cos(f["a"], f["p"])) - (1 - _cos(f["a"], f["n"])) + 1.0).sum(), ["a", "n"]),
    "npair": (lambda a, p, y: F.npair_loss(a, p, y, l2_reg=0.01), {"a": X, "p": Y, "y": np.array([0, 1, 0, 2], "int64")},
              lambda f: _npair_ref(f["a"], f["p"], f["y"], 0.01), ["a", "p"]),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_losses(name):
    fn, feeds, ref, wrt = MORE[name]
    _both_modes(fn, feeds, ref(feeds))
    _eager_gradcheck(fn, feeds, wrt)


def test_more_loss_layers():
    with context.static_mode_guard(False):
        x, y, w = _t(LOGITS, HARD, W)
        assert paddle.nn.MultiMarginLoss(weight=w)(x, y).numpy() == F.multi_margin_loss(x, y, weight=w).numpy()
        a, p, n = _t(X, Y, P)
        assert paddle.nn.TripletMarginWithDistanceLoss(margin=0.5)(a, p, n).numpy() == \
            F.triplet_margin_with_distance_loss(a, p, n, margin=0.5).numpy()


def test_int32_labels_are_accepted_where_the_reference_accepts_them():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(LOGITS)
        got = F.multi_margin_loss(x, paddle.to_tensor(HARD.astype("int32"))).numpy()
        np.testing.assert_allclose(got, _multi_margin_ref(LOGITS, HARD, 1, 1.0, np.ones(4)).mean(), rtol=1e-12)


# --- fluid 1.x loss layers ------------------------------------------------------------------------------
def _smooth_l1_ref(x, y, iw, ow, sigma):
    d = (x - y) * iw
    s2 = sigma * sigma
    v = np.where(np.abs(d) < 1 / s2, 0.5 * s2 * d * d, np.abs(d) - 0.5 / s2) * ow
    return v.sum(1, keepdims=True)


FLUID = {
    "huber_loss": (lambda x, y: fluid.layers.huber_loss(x, y, 0.6), {"x": X[:, :1], "y": Y[:, :1]},
                   lambda f: np.where(np.abs(f["y"] - f["x"]) <= 0.6, 0.5 * (f["y"] - f["x"]) ** 2,
                                      0.6 * np.abs(f["y"] - f["x"]) - 0.18), ["x", "y"]),
    "kldiv_loss": (lambda x, t: fluid.layers.kldiv_loss(x, t, reduction="sum"), {"x": _log_softmax(X), "t": P},
                   lambda f: (f["t"] * (np.log(f["t"]) - f["x"])).sum(), ["x"]),
    "mse_loss": (lambda x, y: fluid.layers.mse_loss(x, y), {"x": X, "y": Y}, lambda f: ((f["x"] - f["y"]) ** 2).mean(),
                 ["x"]),
    "margin_rank_loss": (lambda s, a, b: fluid.layers.margin_rank_loss(s, a, b, margin=0.2),
                         {"s": SIGN[:, None], "a": X[:, :1], "b": Y[:, :1]},
                         lambda f: np.maximum(0, -f["s"] * (f["a"] - f["b"]) + 0.2), ["a", "b"]),
    "rank_loss": (lambda s, a, b: fluid.layers.rank_loss(s, a, b), {"s": T[:, :1], "a": X[:, :1], "b": Y[:, :1]},
                  lambda f: np.log(1 + np.exp(f["a"] - f["b"])) - f["s"] * (f["a"] - f["b"]), ["a", "b"]),
    "smooth_l1": (lambda x, y, iw, ow: fluid.layers.smooth_l1(x, y, iw, ow, sigma=1.5),
                  {"x": X, "y": Y, "iw": P, "ow": T}, lambda f: _smooth_l1_ref(f["x"], f["y"], f["iw"], f["ow"], 1.5),
                  ["x", "y"]),
}


@pytest.mark.parametrize("name", sorted(FLUID))
def test_fluid_losses(name):
    fn, feeds, ref, wrt = FLUID[name]
    _both_modes(fn, feeds, ref(feeds))
    _eager_gradcheck(fn, feeds, wrt)


def _multi_label_margin_ref(x, label):
    n, c = x.shape
    out = np.zeros(n)
    for s in range(n):
        targets = []
        for v in label[s]:
            if v < 0:
                break
            targets.append(int(v))
        for j in targets:
            for i in range(c):
                if i not in targets:
                    out[s] += max(0.0, 1 - (x[s, j] - x[s, i]))
    return out / c


ML_LABEL = np.array([[3, 0, -1, 1], [1, -1, 2, 2], [-1, 0, 0, 0], [2, 2, 1, 0]], "int64")


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_multi_label_margin_loss(reduction):
    x = rng.normal(size=(4, 4))

    def fn(x, y):
        return F.multi_label_margin_loss(x, y, reduction=reduction)
    want = _multi_label_margin_ref(x, ML_LABEL)
    _both_modes(fn, {"x": x, "y": ML_LABEL}, want if reduction == "none" else want.mean())
    _eager_gradcheck(fn, {"x": x, "y": ML_LABEL}, ["x"])
    with context.static_mode_guard(False):
        layer = paddle.nn.MultiLabelMarginLoss(reduction=reduction)
        np.testing.assert_array_equal(layer(*_t(x, ML_LABEL)).numpy(), fn(*_t(x, ML_LABEL)).numpy())
