"""The demo (the 2.x way: a paddle.io.Dataset, paddle.Model.fit with a progress bar, Accuracy and a
checkpoint) learns on synthetic digit-like data, so the test needs no scikit-learn; with
scikit-learn installed, the real data loads as the demo expects."""
import os

import numpy as np
import pytest

from headrace import demo
from headrace.core import context


@pytest.fixture(autouse=True)
def dygraph(fresh_programs):
    with context.static_mode_guard(False):     # the demo runs in dygraph mode, as `python -m headrace.demo`
        yield


def _synthetic(n, rng, prototypes):
    """Ten classes, each a fixed random 8x8 prototype plus noise."""
    labels = rng.integers(0, 10, n)
    images = prototypes[labels] + 0.15 * rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    return images.astype(np.float32), labels[:, None].astype(np.int64)


def test_training_loop_learns(capsys):
    rng = np.random.default_rng(0)
    prototypes = rng.random((10, 1, 8, 8)).astype(np.float32)
    history = demo.train(_synthetic(384, rng, prototypes), _synthetic(128, rng, prototypes), epochs=6, batch_size=64,
                         seed=0, learning_rate=0.01)
    losses = [h[0] for h in history]
    assert len(history) == 6 and losses[-1] < 0.5 * losses[0], losses
    assert history[-1][2] > 0.9, history  # test accuracy
    out = capsys.readouterr().out
    assert "Epoch 6/6" in out and out.count("Eval samples: 128") == 6
    bars = [line for line in out.splitlines() if line.startswith("step 6/6 [==============================] - loss: ")]
    assert len(bars) == 6 and all(" - acc: " in b and "samples/s" in b for b in bars)
    assert out.count("test acc") == 6


def test_digits_split():
    pytest.importorskip("sklearn")
    (x, y), (tx, ty) = demo.load_digits_split(seed=0)
    assert x.shape[1:] == (1, 8, 8) and x.dtype == np.float32 and y.dtype == np.int64
    assert len(x) + len(tx) == 1797 and len(tx) == 449
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_checkpoint_reloads_in_a_fresh_process(tmp_path):
    """The demo's final checkpoint, loaded by Model.load in a new process, gives the same test accuracy."""
    rng = np.random.default_rng(1)
    prototypes = rng.random((10, 1, 8, 8)).astype(np.float32)
    test_data = _synthetic(96, rng, prototypes)
    history = demo.train(_synthetic(256, rng, prototypes), test_data, epochs=2, batch_size=64, seed=0,
                         learning_rate=0.01, save_dir=str(tmp_path), verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["0.pdopt", "0.pdparams", "final.pdopt", "final.pdparams"]
    line = demo.reload_in_fresh_process(str(tmp_path / "final"), test_data)
    assert line == f"reloaded in a fresh process: test acc {history[-1][2]:.3f}"
