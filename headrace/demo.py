"""The demo: train a small convolutional classifier on scikit-learn's handwritten digits, the 2.x way.

    python -m headrace.demo [--epochs N] [--batch-size B] [--learning-rate LR] [--seed S]

The data set (1,797 8x8 grey images of the digits 0-9) ships inside scikit-learn, so nothing is
downloaded.  It is wrapped in a ``paddle.io.Dataset`` and batched by the ``paddle.io.DataLoader``
that ``paddle.Model.fit`` builds; the network is an ``nn.Sequential`` (conv -> batch norm -> relu
-> max-pool -> fc with dropout -> fc) run in eager mode.  ``fit`` prints a progress bar per epoch
(loss, accuracy, time per step, samples/s, ETA) and evaluates ``paddle.metric.Accuracy`` on a
held-out quarter of the images after every epoch; ``ModelCheckpoint`` saves the model
(``<dir>/<epoch>.pdparams``/``.pdopt`` and ``<dir>/final``).  At the end a fresh Python process
builds the same network, loads ``final`` with ``Model.load`` and reports its test accuracy.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import headrace as paddle
from headrace import nn
from headrace.static import InputSpec


def load_digits_split(seed: int, test_fraction: float = 0.25):
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # the demo extra installs it: pip install -e .[demo]
        raise SystemExit("the demo needs scikit-learn: pip install -e '.[demo]'") from exc
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # N, 1, 8, 8 in [0, 1]
    labels = digits.target.astype(np.int64)[:, None]
    order = np.random.default_rng(seed).permutation(len(images))
    n_test = int(len(images) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


class Digits(paddle.io.Dataset):
    """(image 1 x 8 x 8 float32, label [1] int64) pairs from two arrays."""

    def __init__(self, images, labels):
        super().__init__()
        self.images, self.labels = images, labels

    def __getitem__(self, index):
        return self.images[index], self.labels[index]

    def __len__(self):
        return len(self.images)


def build_model(learning_rate: float | None = None):
    """The network in a ``paddle.Model``, prepared with Adam (when ``learning_rate`` is given),
    cross entropy and accuracy."""
    net = nn.Sequential(
        nn.Conv2D(1, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU(),
        nn.MaxPool2D(kernel_size=2, stride=2),                      # 16 x 4 x 4
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(64, 10))
    model = paddle.Model(net, [InputSpec([None, 1, 8, 8], "float32", "image")],
                         [InputSpec([None, 1], "int64", "label")])
    optimizer = None if learning_rate is None else paddle.optimizer.Adam(learning_rate, parameters=net.parameters())
    model.prepare(optimizer, nn.CrossEntropyLoss(), paddle.metric.Accuracy())
    return model


class History(paddle.callbacks.Callback):
    """Per epoch: (mean training loss, training accuracy, test accuracy)."""

    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_begin(self, epoch, logs=None):
        self._loss, self._seen = 0.0, 0

    def on_train_batch_end(self, step, logs=None):
        self._loss += logs["loss"][0] * logs["batch_size"]
        self._seen += logs["batch_size"]

    def on_epoch_end(self, epoch, logs=None):
        self._train = (self._loss / self._seen, float(logs["acc"]))

    def on_eval_end(self, logs=None):
        self.epochs.append(self._train + (float(logs["acc"]),))
        print(f"  loss {self._train[0]:.4f}  train acc {self._train[1]:.3f}  test acc {self.epochs[-1][2]:.3f}")


def train(train_data, test_data, epochs: int, batch_size: int, seed: int, learning_rate: float,
          save_dir: str | None = None, verbose: int = 1) -> list:
    """Train on ``train_data`` ((images N x 1 x 8 x 8 float32, labels N x 1 int64)) with
    ``Model.fit``; return ``[(mean loss, train accuracy, test accuracy)]`` per epoch.  With
    ``save_dir`` the checkpoints (``0`` ... and ``final``) are written there."""
    paddle.seed(seed)
    model = build_model(learning_rate)
    print(f"digits: {len(train_data[0])} training and {len(test_data[0])} test images of 8x8; "
          f"{sum(int(np.prod(p.shape)) for p in model.parameters())} parameters")
    history = History()
    model.fit(Digits(*train_data), Digits(*test_data), batch_size=batch_size, epochs=epochs, verbose=verbose,
              log_freq=10, save_dir=save_dir, save_freq=epochs, callbacks=[history])
    return history.epochs


def evaluate_saved(checkpoint: str, data_path: str) -> float:
    """Build the network, ``Model.load`` the checkpoint and return its accuracy on the saved test data."""
    model = build_model()
    model.load(checkpoint)
    data = np.load(data_path)
    return float(model.evaluate(Digits(data["images"], data["labels"]), batch_size=256, verbose=0)["acc"])


def reload_in_fresh_process(checkpoint: str, test_data) -> str:
    """Run ``evaluate_saved`` in a new Python process; return what it printed."""
    data_path = checkpoint + "_test_data.npz"
    np.savez(data_path, images=test_data[0], labels=test_data[1])
    done = subprocess.run([sys.executable, "-m", "headrace.demo", "--evaluate-saved", checkpoint, data_path],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"reloading the saved model failed:\n{done.stderr}")
    return done.stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluate-saved", nargs=2, metavar=("CHECKPOINT", "TEST_DATA"),
                        help="load a saved model and print its accuracy on the test data (used by the demo)")
    args = parser.parse_args(argv)
    if args.evaluate_saved:
        print(f"reloaded in a fresh process: test acc {evaluate_saved(*args.evaluate_saved):.3f}")
        return 0
    paddle.disable_static()
    train_data, test_data = load_digits_split(args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        train(train_data, test_data, args.epochs, args.batch_size, args.seed, args.learning_rate, save_dir=tmp)
        elapsed = time.perf_counter() - started
        print(f"trained {args.epochs} epochs in {elapsed:.1f} s; checkpoints {sorted(os.listdir(tmp))}")
        print(reload_in_fresh_process(os.path.join(tmp, "final"), test_data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
