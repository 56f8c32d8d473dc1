"""``paddle.dataset.cifar`` (1.x): CIFAR-10/100 reader creators over the python tarballs in
``DATA_HOME/cifar`` (``cifar-10-python.tar.gz``, ``cifar-100-python.tar.gz``; nothing is downloaded).

Each sample is ``(image, label)``: the image float32 of shape (3072,) in [0, 1] (``pixel / 255``,
channel-major: 1024 red, 1024 green, 1024 blue values), the label a Python ``int``.  The pickled
batches are read with headrace's restricted unpickler, which runs no code from the file (a pickle
asking for anything but NumPy arrays and plain containers is refused: ``DatasetFileError``).
Batches are read in archive order, as the reference.
"""
from __future__ import annotations

import numpy as np

from . import common
from ._files import read_cifar

__all__ = ["train100", "test100", "train10", "test10", "fetch"]

URL_PREFIX = "https://dataset.bj.bcebos.com/cifar/"
CIFAR10_URL = URL_PREFIX + "cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR100_URL = URL_PREFIX + "cifar-100-python.tar.gz"
CIFAR100_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"


def reader_creator(filename, sub_name, cycle=False):
    """A reader over the batches of ``filename`` whose member name contains ``sub_name``; with
    ``cycle`` it starts over at the end, forever."""
    def reader():
        while True:
            for data, labels in read_cifar(filename, sub_name, sort=False):
                images = (data / 255.0).astype(np.float32)
                for image, label in zip(images, labels):
                    yield image, int(label)
            if not cycle:
                break

    return reader


def train100():
    """CIFAR-100 training set creator: (float32 (3072,) in [0, 1], fine label in [0, 99])."""
    return reader_creator(common.download(CIFAR100_URL, "cifar", CIFAR100_MD5), "train")


def test100():
    """CIFAR-100 test set creator: (float32 (3072,) in [0, 1], fine label in [0, 99])."""
    return reader_creator(common.download(CIFAR100_URL, "cifar", CIFAR100_MD5), "test")


def train10(cycle=False):
    """CIFAR-10 training set creator (``data_batch_1..5``): (float32 (3072,) in [0, 1], label in [0, 9])."""
    return reader_creator(common.download(CIFAR10_URL, "cifar", CIFAR10_MD5), "data_batch", cycle=cycle)


def test10(cycle=False):
    """CIFAR-10 test set creator (``test_batch``): (float32 (3072,) in [0, 1], label in [0, 9])."""
    return reader_creator(common.download(CIFAR10_URL, "cifar", CIFAR10_MD5), "test_batch", cycle=cycle)


def fetch():
    """Check that both CIFAR tarballs are in the cache (raises naming the first missing one)."""
    common.download(CIFAR10_URL, "cifar", CIFAR10_MD5)
    common.download(CIFAR100_URL, "cifar", CIFAR100_MD5)
