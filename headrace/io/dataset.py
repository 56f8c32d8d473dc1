"""Dataset base classes of ``paddle.io``: ``Dataset`` (map-style) and ``IterableDataset``.

A map-style dataset defines ``__getitem__(idx)`` and ``__len__()``; an iterable one defines
``__iter__()``. As the reference, the base methods raise ``NotImplementedError`` naming the
subclass, and an ``IterableDataset`` refuses indexing and ``len`` with ``RuntimeError``.
"""
from __future__ import annotations


class Dataset:
    """Map-style dataset: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx):
        raise NotImplementedError(
            f"'__getitem__' is not implemented in class {type(self).__name__}")

    def __len__(self):
        raise NotImplementedError(
            f"'__len__' is not implemented in class {type(self).__name__}")


class IterableDataset(Dataset):
    """Stream-style dataset: subclasses implement ``__iter__``; it has no index or length."""

    def __iter__(self):
        raise NotImplementedError(
            f"'__iter__' is not implemented in class {type(self).__name__}")

    def __getitem__(self, idx):
        raise RuntimeError(
            f"{type(self).__name__} is an IterableDataset: '__getitem__' should not be called")

    def __len__(self):
        raise RuntimeError(
            f"{type(self).__name__} is an IterableDataset: '__len__' should not be called")
