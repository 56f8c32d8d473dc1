"""Index samplers: ``Sampler`` (base), ``BatchSampler`` and ``DistributedBatchSampler``.

``DistributedBatchSampler(dataset, batch_size, num_replicas=None, rank=None, shuffle=False,
drop_last=False)`` gives each rank its own batches of dataset indices, with the reference's
semantics:
- the indices ``0 .. len(dataset)-1`` are padded, by repeating them from the start, to
  ``total_size = num_replicas * ceil(len(dataset) / num_replicas)`` (every rank gets the same
  number of samples, ``num_samples``);
- with ``shuffle``, the padded list is shuffled by ``np.random.RandomState(epoch)``; ``epoch``
  starts at 0, goes up by one per iteration, and ``set_epoch(e)`` sets it (so every rank shuffles
  alike);
- rank ``r`` takes, of every run of ``batch_size * num_replicas`` consecutive indices, the
  ``r``-th ``batch_size`` ones; the final shorter run is split evenly between the ranks;
- those are cut into batches of ``batch_size``; the last, shorter one is dropped if ``drop_last``.
``num_replicas`` and ``rank`` default to the process group's (``paddle.distributed``).
"""
from __future__ import annotations

import math

import numpy as np


class Sampler:
    """Base class: an iterable of dataset indices (``data_source`` is kept for subclasses)."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} should be an int >= {low}, got {value!r}")
    return value


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be a bool, got {type(value).__name__} {value!r}")
    return value


class BatchSampler(Sampler):
    """Batches of ``batch_size`` indices of ``dataset`` (or of the indices ``sampler`` yields)."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        super().__init__(dataset)
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give either dataset or sampler, not both or neither")
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.shuffle = _check_bool("shuffle", shuffle)
        self.drop_last = _check_bool("drop_last", drop_last)
        if sampler is not None and shuffle:
            raise ValueError("BatchSampler: shuffle must be False when a sampler is given")
        self.sampler = sampler if sampler is not None else range(len(dataset))

    def _indices(self):
        if self.shuffle:
            return np.random.permutation(len(self.data_source)).tolist()
        return list(self.sampler)

    def __iter__(self):
        yield from _batches(self._indices(), self.batch_size, self.drop_last)

    def __len__(self):
        count = len(self.sampler)
        return (count + (0 if self.drop_last else self.batch_size - 1)) // self.batch_size


def _batches(indices, batch_size, drop_last):
    for start in range(0, len(indices), batch_size):
        batch = indices[start:start + batch_size]
        if len(batch) == batch_size or not drop_last:
            yield batch


class DistributedBatchSampler(BatchSampler):
    """This rank's batches of dataset indices (see the module docstring)."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False):
        Sampler.__init__(self, dataset)
        self.dataset = dataset
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.shuffle = _check_bool("shuffle", shuffle)
        self.drop_last = _check_bool("drop_last", drop_last)
        if num_replicas is None or rank is None:
            from ..distributed.env import get_rank, get_world_size

            num_replicas = get_world_size() if num_replicas is None else num_replicas
            rank = get_rank() if rank is None else rank
        self.nranks = _check_int("num_replicas", num_replicas, 1)
        self.local_rank = _check_int("rank", rank, 0)
        if self.local_rank >= self.nranks:
            raise ValueError(f"rank {rank} is not below num_replicas {num_replicas}")
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def _padded(self) -> list:
        indices = list(range(len(self.dataset)))
        if not indices:
            return []
        while len(indices) < self.total_size:
            indices += indices[:self.total_size - len(indices)]
        return indices

    def _mine(self, indices) -> list:
        if self.nranks == 1:
            return indices
        stride = self.batch_size * self.nranks
        tail = self.total_size % stride
        mine = []
        for start in range(self.local_rank * self.batch_size, len(indices) - tail, stride):
            mine += indices[start:start + self.batch_size]
        share = tail // self.nranks
        rest = indices[len(indices) - tail:]
        return mine + rest[self.local_rank * share:(self.local_rank + 1) * share]

    def __iter__(self):
        indices = self._padded()
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        yield from _batches(self._mine(indices), self.batch_size, self.drop_last)

    def __len__(self):
        return (self.num_samples + (0 if self.drop_last else self.batch_size - 1)) // self.batch_size

    def set_epoch(self, epoch) -> None:
        """The shuffle seed of the next iteration (set the same on every rank)."""
        self.epoch = _check_int("epoch", epoch, 0)
