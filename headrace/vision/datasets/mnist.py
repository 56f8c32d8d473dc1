"""``paddle.vision.datasets.MNIST`` and ``FashionMNIST``: the gzipped IDX files, from explicit paths
or the reference's cache (``DATA_HOME/mnist``, ``DATA_HOME/fashion-mnist``; nothing is downloaded).

A sample is ``(image, label)``: with the 'pil' backend a 28x28 ``PIL.Image`` in mode 'L' (before
the transform); with 'cv2' a float32 (the default dtype) 28x28 array of values 0..255 (cast after the
transform, as the reference); the label an int64 array of shape (1,).
"""
from __future__ import annotations

import numpy as np

from ...dataset.common import _check_exists_and_download
from ...dataset import mnist as _mnist_1x
from ...dataset._files import read_mnist
from ._base import ImageDataset

__all__ = ["MNIST", "FashionMNIST"]


class MNIST(ImageDataset):
    """MNIST handwritten digits (``image_path``/``label_path`` or the cache; ``mode`` 'train'/'test')."""

    NAME = "mnist"
    # the same files as the 1.x reader's (paddle.dataset.mnist)
    URL_PREFIX = _mnist_1x.URL_PREFIX
    TEST_IMAGE_URL, TEST_IMAGE_MD5 = _mnist_1x.TEST_IMAGE_URL, _mnist_1x.TEST_IMAGE_MD5
    TEST_LABEL_URL, TEST_LABEL_MD5 = _mnist_1x.TEST_LABEL_URL, _mnist_1x.TEST_LABEL_MD5
    TRAIN_IMAGE_URL, TRAIN_IMAGE_MD5 = _mnist_1x.TRAIN_IMAGE_URL, _mnist_1x.TRAIN_IMAGE_MD5
    TRAIN_LABEL_URL, TRAIN_LABEL_MD5 = _mnist_1x.TRAIN_LABEL_URL, _mnist_1x.TRAIN_LABEL_MD5

    def __init__(self, image_path=None, label_path=None, mode="train", transform=None, download=True, backend=None):
        self._setup(mode, transform, backend)
        train = self.mode == "train"
        self.image_path = _check_exists_and_download(
            image_path, self.TRAIN_IMAGE_URL if train else self.TEST_IMAGE_URL,
            self.TRAIN_IMAGE_MD5 if train else self.TEST_IMAGE_MD5, self.NAME, download, "image_path")
        self.label_path = _check_exists_and_download(
            label_path, self.TRAIN_LABEL_URL if train else self.TEST_LABEL_URL,
            self.TRAIN_LABEL_MD5 if train else self.TEST_LABEL_MD5, self.NAME, download, "label_path")
        self.images, labels = read_mnist(self.image_path, self.label_path)
        self.labels = labels.astype(np.int64).reshape(-1, 1)

    def __getitem__(self, idx):
        image = self.images[idx]
        if self.backend == "cv2":
            image = image.astype(np.float32)
        return self._finish(image, self.labels[idx].copy())

    def __len__(self):
        return len(self.labels)


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's format and API, files in ``DATA_HOME/fashion-mnist``."""

    NAME = "fashion-mnist"
    URL_PREFIX = "https://dataset.bj.bcebos.com/fashion_mnist/"
    TEST_IMAGE_URL = URL_PREFIX + "t10k-images-idx3-ubyte.gz"
    TEST_IMAGE_MD5 = "bef4ecab320f06d8554ea6380940ec79"
    TEST_LABEL_URL = URL_PREFIX + "t10k-labels-idx1-ubyte.gz"
    TEST_LABEL_MD5 = "bb300cfdad3c16e7a12a480ee83cd310"
    TRAIN_IMAGE_URL = URL_PREFIX + "train-images-idx3-ubyte.gz"
    TRAIN_IMAGE_MD5 = "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    TRAIN_LABEL_URL = URL_PREFIX + "train-labels-idx1-ubyte.gz"
    TRAIN_LABEL_MD5 = "25c81989df183df01b3e8a0aad5dffbe"
