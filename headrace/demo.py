"""The demo: train a small convolutional classifier on scikit-learn's handwritten digits.

    python -m headrace.demo [--epochs N] [--batch-size B] [--learning-rate LR] [--seed S]

The data set (1,797 8x8 grey images of the digits 0-9) ships inside scikit-learn, so nothing is
downloaded.  The network is declared once as a static Program (conv -> batch norm -> relu ->
max-pool -> fc with dropout -> fc); ``Adam.minimize`` appends the backward and the update ops;
the Executor runs one training step per mini-batch.  Each epoch prints a progress bar, then the
mean training loss and accuracy and the accuracy on a held-out quarter of the images, measured
with a test clone of the program (dropout off, batch norm on its moving statistics).  At the end
the trained model is saved as an inference model (``static.save_inference_model``) and a fresh
Python process loads it (``static.load_inference_model``) and reports its test accuracy.
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
import headrace.static as static
from headrace.nn import functional as F


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


def build(seed: int, learning_rate: float):
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = seed
    with static.program_guard(main, startup):
        image = static.data("image", [-1, 1, 8, 8], "float32")
        label = static.data("label", [-1, 1], "int64")
        h = static.nn.conv2d(image, num_filters=16, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="relu")
        h = F.max_pool2d(h, kernel_size=2, stride=2)                 # 16 x 4 x 4
        h = static.nn.fc(h, size=64, activation="relu")
        h = F.dropout(h, p=0.2)
        logits = static.nn.fc(h, size=10)
        loss = paddle.mean(F.cross_entropy(logits, label, reduction="none"))
        probs = F.softmax(logits)
        accuracy = static.accuracy(probs, label)
        test_program = main.clone(for_test=True)
        paddle.optimizer.Adam(learning_rate=learning_rate).minimize(loss)
    main.inference_io = (image, probs)   # what save_inference_model feeds and fetches
    return main, startup, test_program, loss, accuracy


def progress(epoch: int, epochs: int, done: int, total: int, width: int = 30) -> None:
    """Redraw the epoch's bar in place on a terminal; in a log (not a TTY) draw it once, full."""
    if done < total and not sys.stdout.isatty():
        return
    filled = width * done // total
    bar = "#" * filled + "-" * (width - filled)
    sys.stdout.write(f"\repoch {epoch:2d}/{epochs} [{bar}] {done}/{total} batches")
    sys.stdout.flush()


def evaluate(exe, program, scope, data, loss, accuracy, batch_size=256):
    images, labels = data
    losses, correct = [], 0.0
    for start in range(0, len(images), batch_size):
        x, y = images[start:start + batch_size], labels[start:start + batch_size]
        lv, av = exe.run(program, feed={"image": x, "label": y}, fetch_list=[loss, accuracy], scope=scope)
        losses.append(float(lv) * len(x))
        correct += float(av) * len(x)
    return sum(losses) / len(images), correct / len(images)


def train(train_data, test_data, epochs: int, batch_size: int, seed: int, learning_rate: float,
          save_prefix: str | None = None) -> list:
    """Train on ``train_data`` ((images N x 1 x 8 x 8 float32, labels N x 1 int64)); print a bar
    and one line per epoch; return ``[(mean loss, train accuracy, test accuracy)]`` per epoch.
    With ``save_prefix`` the trained model is saved there as an inference model."""
    main_program, startup, test_program, loss, accuracy = build(seed, learning_rate)
    print(f"digits: {len(train_data[0])} training and {len(test_data[0])} test images of 8x8; "
          f"{len(main_program.global_block().ops)} ops per training step")
    scope = static.Scope()
    exe = static.Executor(paddle.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    images, labels = train_data
    batches = (len(images) + batch_size - 1) // batch_size
    history = []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(images))
        seen, loss_sum, correct = 0, 0.0, 0.0
        for b in range(batches):
            index = order[b * batch_size:(b + 1) * batch_size]
            lv, av = exe.run(main_program, feed={"image": images[index], "label": labels[index]},
                             fetch_list=[loss, accuracy], scope=scope)
            seen += len(index)
            loss_sum += float(lv) * len(index)
            correct += float(av) * len(index)
            progress(epoch, epochs, b + 1, batches)
        _, test_acc = evaluate(exe, test_program, scope, test_data, loss, accuracy)
        history.append((loss_sum / seen, correct / seen, test_acc))
        print(f"  loss {loss_sum / seen:.4f}  train acc {correct / seen:.3f}  test acc {test_acc:.3f}")
    if save_prefix is not None:
        with static.scope_guard(scope):
            image, probs = main_program.inference_io
            static.save_inference_model(save_prefix, [image], [probs], exe, program=main_program)
    return history


def evaluate_saved(model_prefix: str, data_path: str) -> float:
    """Load the inference model ``train`` saved and return its accuracy on the saved test data."""
    paddle.enable_static()
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(model_prefix, exe)
    data = np.load(data_path)
    probs = exe.run(program, feed={feeds[0]: data["images"]}, fetch_list=fetches)[0]
    return float(np.mean(np.argmax(probs, axis=1) == data["labels"][:, 0]))


def reload_in_fresh_process(model_prefix: str, test_data) -> str:
    """Run ``evaluate_saved`` in a new Python process; return what it printed."""
    data_path = model_prefix + "_test_data.npz"
    np.savez(data_path, images=test_data[0], labels=test_data[1])
    done = subprocess.run([sys.executable, "-m", "headrace.demo", "--evaluate-saved", model_prefix, data_path],
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
    parser.add_argument("--evaluate-saved", nargs=2, metavar=("MODEL_PREFIX", "TEST_DATA"),
                        help="load a saved model and print its accuracy on the test data (used by the demo)")
    args = parser.parse_args(argv)
    if args.evaluate_saved:
        print(f"reloaded in a fresh process: test acc {evaluate_saved(*args.evaluate_saved):.3f}")
        return 0
    paddle.enable_static()  # the demo builds a static program (headrace starts in dygraph mode)
    train_data, test_data = load_digits_split(args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "digits")
        train(train_data, test_data, args.epochs, args.batch_size, args.seed, args.learning_rate, prefix)
        elapsed = time.perf_counter() - started
        print(f"trained {args.epochs} epochs in {elapsed:.1f} s; peak runtime memory "
              f"{paddle.device.cpu.max_memory_allocated() / 2**20:.2f} MiB; saved {prefix}.pdmodel/.pdiparams")
        print(reload_in_fresh_process(prefix, test_data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
