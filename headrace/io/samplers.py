"""Index samplers of ``paddle.io`` beyond the batch samplers: ``SequenceSampler``,
``RandomSampler``, ``SubsetRandomSampler`` and ``WeightedRandomSampler`` (the reference's
semantics).

- ``RandomSampler(data_source, replacement=False, num_samples=None, generator=None)``: a
  permutation of ``range(len(data_source))`` cut to ``num_samples`` (or ``num_samples`` draws with
  replacement) from NumPy's global generator (``np.random.seed`` makes it repeat); as the
  reference, ``generator`` is an iterator of indices: the sampler yields its first
  ``num_samples`` items.
- ``SubsetRandomSampler(indices)``: ``indices`` in a random order, drawn from the generator
  ``paddle.seed`` sets.
- ``WeightedRandomSampler(weights, num_samples, replacement=True)``: indices in
  ``[0, len(weights))`` drawn with probabilities proportional to ``weights`` (NumPy's global
  generator); a 2-D ``weights`` gives ``num_samples`` draws per row, rows one after the other.
"""
from __future__ import annotations

import numpy as np

from .sampler import Sampler


class SequenceSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        super().__init__(data_source)

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Shuffled indices of ``data_source`` (see the module docstring)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a bool, got {replacement!r}")
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        n = self.num_samples
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive int, got {n!r}")
        if not replacement and n > len(data_source):
            raise ValueError(f"RandomSampler: num_samples ({n}) should not exceed the length of "
                             f"data_source ({len(data_source)}) when replacement is False")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        if self.generator is not None:
            for _ in range(self.num_samples):
                try:
                    yield next(self.generator)
                except StopIteration:
                    return
            return
        n = len(self.data_source)
        yield from np.random.choice(n, self.num_samples, replace=self.replacement).tolist()

    def __len__(self):
        return self.num_samples


def _weights_array(weights) -> np.ndarray:
    if hasattr(weights, "numpy"):
        weights = weights.numpy()
    if not isinstance(weights, (np.ndarray, list, tuple)):
        raise TypeError("WeightedRandomSampler: weights should be a Tensor, numpy.ndarray, list or "
                        f"tuple, got {type(weights).__name__}")
    arr = np.asarray(weights, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise ValueError(f"WeightedRandomSampler: weights should be a non-empty 1-D or 2-D array, got "
                         f"shape {list(arr.shape)}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("WeightedRandomSampler: weights should be finite and non-negative")
    return arr.reshape(-1, arr.shape[-1])


class WeightedRandomSampler(Sampler):
    """Indices drawn with probabilities proportional to ``weights`` (see the module docstring)."""

    def __init__(self, weights, num_samples, replacement=True):
        super().__init__(None)
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples should be a positive int, got {num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a bool, got {replacement!r}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement

    def __iter__(self):
        rows = _weights_array(self.weights)
        positive = (rows > 0).sum(axis=1)
        if np.any(positive == 0):
            raise ValueError("WeightedRandomSampler: every row of weights needs a positive value")
        if not self.replacement and np.any(positive < self.num_samples):
            raise ValueError(f"WeightedRandomSampler: with replacement=False, num_samples ({self.num_samples}) "
                             f"should not exceed the number of positive weights ({int(positive.min())})")
        draws = [np.random.choice(row.size, self.num_samples, self.replacement, row / row.sum())
                 for row in rows]
        return iter(np.concatenate(draws).tolist())

    def __len__(self):
        return self.num_samples * _weights_array(self.weights).shape[0]


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (without replacement)."""

    def __init__(self, indices):
        if len(indices) == 0:
            raise ValueError("SubsetRandomSampler: indices should not be empty")
        super().__init__(None)
        self.indices = indices

    def __iter__(self):
        from ..core.random import default_generator

        for k in default_generator().numpy.permutation(len(self.indices)).tolist():
            yield self.indices[k]

    def __len__(self):
        return len(self.indices)
