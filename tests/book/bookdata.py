"""Tiny, learnable data for the book chapters, written in the real on-disk formats under a
``DATA_HOME`` laid out as the reference's cache (``tests/datafiles.py`` has the format encoders;
its own writers draw random, unlearnable values, fine for format tests but not for showing that a
chapter learns).  Each writer draws from a NumPy generator seeded by ``seed``.

- ``uci_housing/housing.data``: 13 features and a price that is linear in the features
  (prices around 22, as the real file's);
- ``mnist/*-idx?-ubyte.gz``: 28x28 images, one noisy prototype per class;
- ``cifar/cifar-10-python.tar.gz``: 32x32x3 images, one noisy prototype per class, two classes
  only: the VGG chapter drops 30-50% of the activations after most of its layers, and on a handful
  of images its loss over ten classes hardly moves in the few passes a test can afford (without
  the dropout it fits them in three); with two classes the fall is clear;
- ``imikolov/simple-examples.tgz``: five-word lines of consecutive words to learn, and a 2000-word
  filler vocabulary in lines too short to give N-grams (``write_ptb``); ``build_dict()`` keeps the
  words seen more than 50 times, so every word is written 52 times.
"""
from __future__ import annotations

import os

import numpy as np

from tests.datafiles import (CIFAR10_FILE, IMIKOLOV_FILE, MNIST_FILES, UCI_HOUSING_FILE, idx_images_bytes,
                             idx_labels_bytes, py2_pickle, write_gzip, write_tar)


def _noisy_classes(rng, count, size, noise, classes=10):
    labels = rng.integers(0, classes, size=count)
    prototypes = rng.integers(0, 256, size=(10, size))
    values = prototypes[labels] + rng.normal(0, noise, size=(count, size))
    return np.clip(values, 0, 255).astype(np.uint8), labels


def write_housing(directory, rows, rng):
    features = rng.uniform(0, 10, size=(rows, 13))
    price = 22.0 + (features - 5.0) @ rng.uniform(-1, 1, size=13)
    with open(os.path.join(directory, UCI_HOUSING_FILE), "w") as f:
        for row in np.column_stack([features, price]):
            f.write(" " + " ".join(f"{v:.4f}" for v in row) + "\n")


def write_mnist(directory, train, test, rng):
    images, labels = _noisy_classes(rng, train + test, 28 * 28, noise=40)
    for mode, part in (("train", slice(0, train)), ("test", slice(train, None))):
        image_name, label_name = MNIST_FILES[mode]
        write_gzip(os.path.join(directory, image_name), idx_images_bytes(images[part].reshape(-1, 28, 28)))
        write_gzip(os.path.join(directory, label_name), idx_labels_bytes(labels[part].astype(np.uint8)))


def write_cifar10(directory, train, test, rng):
    images, labels = _noisy_classes(rng, train + test, 3072, noise=40, classes=2)
    members = {"cifar-10-batches-py/batches.meta": py2_pickle({b"label_names": [b"c%d" % i for i in range(10)]})}
    batches = np.array_split(np.arange(train), 5)          # data_batch_1..5, as the reference reads them
    parts = [(f"data_batch_{b + 1}", idx) for b, idx in enumerate(batches)] + [("test_batch", np.arange(train, train + test))]
    for name, idx in parts:
        members[f"cifar-10-batches-py/{name}"] = py2_pickle(
            {b"batch_label": name.encode(), b"labels": [int(v) for v in labels[idx]], b"data": images[idx]})
    write_tar(os.path.join(directory, CIFAR10_FILE), members)


def write_ptb(directory, rng, filler=2000, patterns=60, repeats=52):
    """PTB-style text: ``patterns`` five-word lines (consecutive words ``p0 p1 p2 p3 p4``, ``p5 ...``)
    repeated ``repeats`` times in ptb.train.txt and once in ptb.valid.txt (the test split of the
    reference's reader), plus ``filler`` words in two-word lines, each word 52 times: they make the
    dictionary as large as a real one (the chapter stops at a test cost of 5.8, which an untrained
    model over a few hundred words already beats), and lines shorter than the N-gram give no samples."""
    pattern_lines = [" ".join(f"p{5 * s + k}" for k in range(5)) for s in range(patterns)]
    filler_words = [f"f{i}" for i in range(filler)]
    filler_lines = [" ".join(filler_words[i:i + 2]) for _ in range(repeats) for i in range(0, filler, 2)]
    train = pattern_lines * repeats + filler_lines
    rng.shuffle(train)
    members = {f"./simple-examples/data/ptb.{split}.txt": "".join(" " + line + " \n" for line in text).encode()
               for split, text in (("train", train), ("valid", pattern_lines), ("test", pattern_lines))}
    write_tar(os.path.join(directory, IMIKOLOV_FILE), members)


def write_book_data(root, seed=0) -> str:
    """All four data sets under ``root`` (the reference's cache layout); returns ``root``."""
    rng = np.random.default_rng(seed)
    for sub in ("uci_housing", "mnist", "cifar", "imikolov"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    write_housing(os.path.join(root, "uci_housing"), 250, rng)
    write_mnist(os.path.join(root, "mnist"), 64, 16, rng)
    write_cifar10(os.path.join(root, "cifar"), 8, 4, rng)
    write_ptb(os.path.join(root, "imikolov"), rng)
    return os.fspath(root)
