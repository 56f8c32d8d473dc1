"""``paddle.dataset.mnist`` (1.x): MNIST reader creators over the gzipped IDX files in
``DATA_HOME/mnist`` (``train-images-idx3-ubyte.gz`` and friends; nothing is downloaded).

Each sample is ``(image, label)``: the image float32 of shape (784,) scaled to [-1, 1]
(``pixel / 255 * 2 - 1``), the label a Python ``int`` in [0, 9], as the reference.
"""
from __future__ import annotations

from . import common
from ._files import read_mnist

__all__ = ["train", "test", "fetch"]

URL_PREFIX = "https://dataset.bj.bcebos.com/mnist/"
TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
TEST_IMAGE_MD5 = "9fb629c4189551a2d022fa330f9573f3"
TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
TEST_LABEL_MD5 = "ec29112dd5afa0611ce80d1b7f02629c"
TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
TRAIN_IMAGE_MD5 = "f68b3c2dcbeaaa9fbdd348bbdeb94873"
TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
TRAIN_LABEL_MD5 = "d53e105ee54ea40749a09fcbcd1e9432"


def reader_creator(image_filename, label_filename, buffer_size=100):
    """A reader over one pair of gzipped IDX files (``buffer_size`` is the reference's read chunk;
    the whole file is read at once here, so it does not matter)."""
    def reader():
        images, labels = read_mnist(image_filename, label_filename)
        flat = images.reshape(len(images), -1).astype("float32")
        flat = flat / 255.0 * 2.0 - 1.0
        for i in range(len(labels)):
            yield flat[i], int(labels[i])

    return reader


def train():
    """MNIST training set creator: a reader of (float32 (784,) in [-1, 1], int label) samples."""
    return reader_creator(common.download(TRAIN_IMAGE_URL, "mnist", TRAIN_IMAGE_MD5),
                          common.download(TRAIN_LABEL_URL, "mnist", TRAIN_LABEL_MD5), 100)


def test():
    """MNIST test set creator: a reader of (float32 (784,) in [-1, 1], int label) samples."""
    return reader_creator(common.download(TEST_IMAGE_URL, "mnist", TEST_IMAGE_MD5),
                          common.download(TEST_LABEL_URL, "mnist", TEST_LABEL_MD5), 100)


def fetch():
    """Check that the four MNIST files are in the cache (raises naming the first missing one)."""
    for url in (TRAIN_IMAGE_URL, TRAIN_LABEL_URL, TEST_IMAGE_URL, TEST_LABEL_URL):
        common.download(url, "mnist")
