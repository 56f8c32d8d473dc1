"""Functional and tensor-level layers compose the right ops and compute the right values."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.nn.functional as F
import headrace.static as static
from tests.helpers import build_and_run

rng = np.random.default_rng(3)


_run = build_and_run


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("ignore", [-100, 1])
def test_cross_entropy_hard_labels_with_ignore_index(reduction, ignore):
    """As the reference: 'none' drops the class dim of a label given without it; 'mean' divides by
    the labels that are not ignore_index only when ignore_index >= 0 (else by all samples)."""
    logits = rng.normal(size=(6, 4))
    label = np.array([0, 3, 1, ignore, 2, ignore], "int64")
    (got,), _ = _run(lambda x, y: F.cross_entropy(x, y, reduction=reduction, ignore_index=ignore),
                     {"x": logits, "y": label})
    per_row = np.array([0.0 if l == ignore else -_log_softmax(logits)[i, l] for i, l in enumerate(label)])
    mean = per_row.sum() / ((label != ignore).sum() if ignore >= 0 else 6)
    want = {"none": per_row, "sum": per_row.sum(), "mean": mean}[reduction]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cross_entropy_soft_labels_and_probabilities():
    logits = rng.normal(size=(5, 3))
    soft = rng.dirichlet(np.ones(3), size=5)
    (got,), _ = _run(lambda x, y: F.cross_entropy(x, y, soft_label=True), {"x": logits, "y": soft})
    np.testing.assert_allclose(got, np.mean(-(soft * _log_softmax(logits)).sum(-1)), rtol=1e-12)
    probs = np.exp(_log_softmax(logits))
    label = np.array([[0], [2], [1], [1], [0]], "int64")
    (got,), _ = _run(lambda x, y: F.cross_entropy(x, y, use_softmax=False, reduction="none"),
                     {"x": probs, "y": label})
    np.testing.assert_allclose(got[:, 0], -np.log(probs[np.arange(5), label[:, 0]]), rtol=1e-12)


def test_cross_entropy_arguments_are_checked():
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(x, y, reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, y, label_smoothing=1.5)


def test_softmax_with_cross_entropy_returns_softmax_on_request():
    logits = rng.normal(size=(4, 5))
    label = rng.integers(0, 5, (4, 1)).astype("int64")
    (loss, sm), _ = _run(lambda x, y: fluid.layers.softmax_with_cross_entropy(x, y, return_softmax=True),
                         {"x": logits, "y": label})
    np.testing.assert_allclose(sm, np.exp(_log_softmax(logits)), rtol=1e-12)
    np.testing.assert_allclose(loss[:, 0], -_log_softmax(logits)[np.arange(4), label[:, 0]], rtol=1e-12)


@pytest.mark.parametrize("mode", ["upscale_in_train", "downscale_in_infer"])
def test_dropout_modes(mode):
    x = np.ones((200, 50))
    (train, test), _ = _run(lambda x: (F.dropout(x, 0.25, mode=mode), F.dropout(x, 0.25, training=False, mode=mode)),
                            {"x": x})
    kept = train != 0
    scale = 1 / 0.75 if mode == "upscale_in_train" else 1.0
    np.testing.assert_allclose(train[kept], scale)
    assert abs(kept.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / x.size)
    np.testing.assert_allclose(test, 1.0 if mode == "upscale_in_train" else 0.75)


def test_dropout_arguments_are_checked():
    x = static.data("x", [None, 3], "float32")
    with pytest.raises(ValueError, match="p must be a number in"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="mode must be"):
        F.dropout(x, 0.5, mode="bogus")
    with pytest.raises(ValueError, match="structured dropout"):
        F.dropout(x, 0.5, axis=1)


def test_fluid_dropout_defaults_to_downgrade_in_infer_and_seed_fixes_the_mask():
    x = np.ones((20, 20), "float32")
    (a, b), outs = _run(lambda x: (fluid.layers.dropout(x, 0.5, seed=7), fluid.layers.dropout(x, 0.5, seed=7)),
                        {"x": x})
    assert outs[0].op.attr("dropout_implementation") == "downgrade_in_infer"
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 1.0}


def test_activations_by_every_name():
    x = rng.normal(size=(3, 4))
    builds = {
        "relu": (lambda x: F.relu(x), np.maximum(x, 0)),
        "sigmoid": (lambda x: fluid.layers.sigmoid(x), 1 / (1 + np.exp(-x))),
        "tanh": (lambda x: paddle.tanh(x), np.tanh(x)),
        "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), np.where(x > 0, x, 0.1 * x)),
        "fluid_leaky": (lambda x: fluid.layers.leaky_relu(x), np.where(x > 0, x, 0.02 * x)),
        "exp": (lambda x: paddle.exp(x), np.exp(x)),
        "abs": (lambda x: paddle.abs(x), np.abs(x)),
        "square": (lambda x: fluid.layers.square(x), x * x),
        "softmax": (lambda x: F.softmax(x, axis=0), np.exp(x) / np.exp(x).sum(0)),
    }
    for name, (build, want) in builds.items():
        (got,), _ = _run(build, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)


def test_pooling_wrappers():
    x = rng.normal(size=(2, 3, 6, 6))
    (mx, av), _ = _run(lambda x: (F.max_pool2d(x, 2), F.avg_pool2d(x, 3, stride=3)), {"x": x})
    np.testing.assert_allclose(mx, x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    np.testing.assert_allclose(av, x.reshape(2, 3, 2, 3, 2, 3).mean(axis=(3, 5)), rtol=1e-12)
    with pytest.raises(ValueError, match="give pool_size"):
        _run(lambda x: fluid.layers.pool2d(x), {"x": x})


def test_accuracy_layer():
    scores = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], "float32")
    label = np.array([[1], [1], [1]], "int64")
    (acc,), _ = _run(lambda s, l: fluid.layers.accuracy(s, l), {"s": scores, "l": label})
    assert acc.shape == () and acc.dtype == np.float32
    np.testing.assert_allclose(acc, 2 / 3, rtol=1e-6)
