"""The demo: train a small convolutional classifier on scikit-learn's handwritten digits.

    python -m headrace.demo [--epochs N] [--batch-size B] [--learning-rate LR] [--seed S]

The data set (1,797 8x8 grey images of the digits 0-9) ships inside scikit-learn, so nothing is
downloaded.  The network is declared once as a static Program (conv -> batch norm -> relu ->
max-pool -> fc with dropout -> fc); ``Adam.minimize`` appends the backward and the update ops;
the Executor runs one training step per mini-batch.  Each epoch prints a progress bar, then the
mean training loss and accuracy and the accuracy on a held-out quarter of the images, measured
with a test clone of the program (dropout off, batch norm on its moving statistics).
"""
from __future__ import annotations

import argparse
import sys
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
        accuracy = static.accuracy(F.softmax(logits), label)
        test_program = main.clone(for_test=True)
        paddle.optimizer.Adam(learning_rate=learning_rate).minimize(loss)
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


def train(train_data, test_data, epochs: int, batch_size: int, seed: int, learning_rate: float) -> list:
    """Train on ``train_data`` ((images N x 1 x 8 x 8 float32, labels N x 1 int64)); print a bar
    and one line per epoch; return ``[(mean loss, train accuracy, test accuracy)]`` per epoch."""
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
    return history


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    paddle.enable_static()  # the demo builds a static program (headrace starts in dygraph mode)
    train_data, test_data = load_digits_split(args.seed)
    started = time.perf_counter()
    train(train_data, test_data, args.epochs, args.batch_size, args.seed, args.learning_rate)
    elapsed = time.perf_counter() - started
    print(f"trained {args.epochs} epochs in {elapsed:.1f} s; peak runtime memory "
          f"{paddle.device.cpu.max_memory_allocated() / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
