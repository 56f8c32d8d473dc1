"""Dataset base classes of ``paddle.io``: ``Dataset`` (map-style) and ``IterableDataset``.

A map-style dataset defines ``__getitem__(idx)`` and ``__len__()``; an iterable one defines
``__iter__()``. As the reference, the base methods raise ``NotImplementedError`` naming the
subclass, and an ``IterableDataset`` refuses indexing and ``len`` with ``RuntimeError``.

Built from them, as the reference: ``TensorDataset``, ``ComposeDataset`` (fields side by side),
``ChainDataset`` (iterables in a row), ``ConcatDataset`` (map datasets in a row), ``Subset`` and
``random_split``. The reference checks its arguments with ``assert``; here they are ``TypeError`` /
``ValueError`` with the offending position.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

import numpy as np


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


def _check_datasets(kind: str, datasets) -> list:
    datasets = list(datasets)
    if not datasets:
        raise ValueError(f"{kind}: the list of datasets is empty")
    return datasets


class TensorDataset(Dataset):
    """Samples are the rows of several tensors: ``dataset[i] == tuple(t[i] for t in tensors)``.

    As the reference it works in dygraph mode only (``RuntimeError`` in static mode), and every
    tensor must have the same size along axis 0."""

    def __init__(self, tensors):
        from ..core.context import in_dynamic_mode

        if not in_dynamic_mode():
            raise RuntimeError("TensorDataset can only be used in dygraph (imperative) mode")
        tensors = list(tensors)
        if not tensors:
            raise ValueError("TensorDataset: the list of tensors is empty")
        sizes = [int(t.shape[0]) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: tensors do not have the same size along axis 0: {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return int(self.tensors[0].shape[0])


def _fields(sample) -> list:
    if isinstance(sample, (list, tuple)):
        return list(sample)
    return [sample]


class ComposeDataset(Dataset):
    """Map-style datasets of the same length side by side: sample ``i`` is the fields of every
    dataset's sample ``i``, concatenated into one tuple."""

    def __init__(self, datasets):
        self.datasets = _check_datasets("ComposeDataset", datasets)
        for k, dataset in enumerate(self.datasets):
            if not isinstance(dataset, Dataset):
                raise TypeError(f"ComposeDataset: dataset {k} should be a paddle.io.Dataset, got "
                                f"{type(dataset).__name__}")
            if isinstance(dataset, IterableDataset):
                raise TypeError(f"ComposeDataset: dataset {k} is an IterableDataset (not supported)")
        lengths = [len(d) for d in self.datasets]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"ComposeDataset: the datasets should have the same length, got {lengths}")

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        sample = []
        for dataset in self.datasets:
            sample.extend(_fields(dataset[idx]))
        return tuple(sample)


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = _check_datasets("ChainDataset", datasets)
        for k, dataset in enumerate(self.datasets):
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset: dataset {k} should be a paddle.io.IterableDataset, got "
                                f"{type(dataset).__name__}")

    def __iter__(self):
        for dataset in self.datasets:
            yield from dataset


class ConcatDataset(Dataset):
    """Map-style datasets one after the other; ``cumulative_sizes`` holds the running lengths."""

    def __init__(self, datasets):
        self.datasets = _check_datasets("ConcatDataset", datasets)
        for k, dataset in enumerate(self.datasets):
            if isinstance(dataset, IterableDataset):
                raise TypeError(f"ConcatDataset: dataset {k} is an IterableDataset (not supported)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence) -> list:
        """The running totals of the lengths of ``sequence``'s items."""
        return list(itertools.accumulate(len(item) for item in sequence))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: index {idx} is out of range for length {len(self)}")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (in that order; repeats allowed)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def _fraction_lengths(total: int, fractions) -> list:
    lengths = []
    for k, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"random_split: fraction at index {k} is not between 0 and 1: {frac}")
        lengths.append(int(math.floor(total * frac)))
    for k in range(total - sum(lengths)):   # the remainder, one each, round robin
        lengths[k % len(lengths)] += 1
    for k, n in enumerate(lengths):
        if n == 0:
            warnings.warn(f"random_split: the split at index {k} is empty", stacklevel=3)
    return lengths


def _permutation(n: int, generator) -> list:
    from ..core.random import Generator, default_generator

    if generator is None:
        generator = default_generator()
    if isinstance(generator, Generator):
        generator = generator.numpy
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        generator = np.random.default_rng(int(generator))
    if not isinstance(generator, (np.random.Generator, np.random.RandomState)):
        raise TypeError("random_split: generator should be None, an int seed, a paddle Generator or a "
                        f"numpy Generator/RandomState, got {type(generator).__name__}")
    return generator.permutation(n).tolist()


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths.

    ``lengths`` are sample counts summing to ``len(dataset)``, or fractions summing to 1 (each
    gets ``floor(len * frac)`` samples, the remainder is handed out one by one from the first
    split). The permutation is drawn from ``generator`` (an int seed, a ``paddle`` Generator, a
    NumPy Generator/RandomState) or, by default, from the global generator ``paddle.seed`` sets.
    """
    lengths = list(lengths)
    total = len(dataset)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fraction_lengths(total, lengths)
    for k, n in enumerate(lengths):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"random_split: length at index {k} should be a non-negative int (or all "
                             f"lengths fractions summing to 1), got {n!r}")
    if sum(lengths) != total:
        raise ValueError(f"random_split: the lengths {lengths} sum to {sum(lengths)}, not to the "
                         f"length of the dataset ({total})")
    indices = _permutation(total, generator)
    ends = list(itertools.accumulate(lengths))
    return [Subset(dataset, indices[end - n:end]) for end, n in zip(ends, lengths)]
