"""``paddle.vision.datasets.Cifar10`` and ``Cifar100``: the CIFAR python tarballs, from ``data_file`` or
the reference's cache (``DATA_HOME/cifar``; nothing is downloaded).  The pickled batches are read
with the restricted unpickler (no code from the file runs), in sorted member order as the reference.

A sample is ``(image, label)``: with 'pil' a 32x32 RGB ``PIL.Image`` (before the transform); with
'cv2' the HWC 32x32x3 array (uint8 into the transform, then cast to the default dtype, as the
reference); the label a 0-d int64 array.
"""
from __future__ import annotations

import numpy as np

from ...dataset.cifar import CIFAR10_MD5, CIFAR10_URL, CIFAR100_MD5, CIFAR100_URL
from ...dataset.common import _check_exists_and_download
from ...dataset._files import read_cifar
from ._base import ImageDataset

__all__ = ["Cifar10", "Cifar100"]

MODE_FLAG_MAP = {"train10": "data_batch", "test10": "test_batch", "train100": "train", "test100": "test"}


class Cifar10(ImageDataset):
    """CIFAR-10 (``data_file`` or the cache; ``mode`` 'train' = data_batch_1..5, 'test' = test_batch)."""

    _URL, _MD5, _CLASSES = CIFAR10_URL, CIFAR10_MD5, "10"

    def __init__(self, data_file=None, mode="train", transform=None, download=True, backend=None):
        self._setup(mode, transform, backend)
        self.data_url, self.data_md5 = self._URL, self._MD5
        self.flag = MODE_FLAG_MAP[self.mode + self._CLASSES]
        self.data_file = _check_exists_and_download(data_file, self.data_url, self.data_md5, "cifar", download)
        batches = read_cifar(self.data_file, self.flag, sort=True)
        self.images = np.concatenate([data for data, _ in batches])
        self.labels = np.array([v for _, labels in batches for v in labels], dtype=np.int64)

    def __getitem__(self, idx):
        image = self.images[idx].reshape(3, 32, 32).transpose(1, 2, 0)
        return self._finish(image, np.array(self.labels[idx], dtype=np.int64))

    def __len__(self):
        return len(self.labels)


class Cifar100(Cifar10):
    """CIFAR-100 (fine labels; ``mode`` 'train' = the ``train`` pickle, 'test' = ``test``)."""

    _URL, _MD5, _CLASSES = CIFAR100_URL, CIFAR100_MD5, "100"
