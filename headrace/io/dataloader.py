"""``paddle.io.DataLoader``: batches from a ``Dataset`` (map-style or iterable), in the main
process or in worker processes (``multiprocess.py``).

What an iteration yields, as the reference:
- dygraph mode: the collated batch with every NumPy array as a ``Tensor`` (a tuple/list sample
  gives a list, a dict sample a dict, a single array a Tensor);
- static mode, ``return_list=True``: the collated batch of NumPy arrays (with several ``places``,
  one batch per place, in a list);
- static mode, ``return_list=False``: one feed dict per place (``[{name: array}]``): the batch's
  arrays, depth first, are given the names of ``feed_list`` in order, so
  ``exe.run(prog, feed=data, ...)`` takes it as it is.
``use_buffer_reader`` and ``use_shared_memory`` are accepted for compatibility; here the main
process reads synchronously when ``num_workers=0`` and worker results come through pipes
(pickled), see docs/architecture.md.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core import context
from .collate import default_collate_fn, default_convert_fn, flat_arrays, map_arrays
from .dataset import IterableDataset
from .fetcher import make_fetcher
from .sampler import BatchSampler


def _positive_int(name, value, allow_zero=False):
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        what = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"DataLoader: {name} should be {what} int, got {value!r}")
    return int(value)


def _check_callable(name, fn):
    if fn is not None and not callable(fn):
        raise TypeError(f"DataLoader: {name} should be callable or None, got {type(fn).__name__}")
    return fn


class _StreamSampler:
    """Index batches for an IterableDataset: just the batch size, for ever (the data decides
    where it ends)."""

    def __init__(self, batch_size):
        self.batch_size = batch_size

    def __iter__(self):
        return itertools.repeat(self.batch_size)


class DataLoader:
    """Iterate ``dataset`` in batches.

    ``batch_size``/``shuffle``/``drop_last`` build a ``BatchSampler`` (or pass ``batch_sampler``;
    ``batch_size=None`` turns batching off); ``collate_fn`` (default ``default_collate_fn``) makes a
    batch of samples; ``num_workers > 0`` reads in that many worker processes, with
    ``prefetch_factor`` batches per worker in flight, ``worker_init_fn(worker_id)`` run in each,
    ``timeout`` seconds (0: no limit) to wait for a batch and ``persistent_workers`` keeping them
    between epochs. ``feed_list``/``return_list``/``places`` choose what static mode yields. See
    the module docstring for what an iteration yields; ``len(loader)`` is the number of batches
    (a ``ValueError`` for an IterableDataset)."""

    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None,
                 batch_size=1, shuffle=False, drop_last=False, collate_fn=None, num_workers=0,
                 use_buffer_reader=True, prefetch_factor=2, use_shared_memory=True, timeout=0,
                 worker_init_fn=None, persistent_workers=False):
        self.dataset = dataset
        self.return_list = bool(return_list)
        if not self.return_list and not context.in_dynamic_mode() and feed_list is None:
            raise ValueError("DataLoader: feed_list should be set when return_list=False in static mode")
        self.feed_list = list(feed_list) if feed_list is not None else None
        self.places = _places(places)
        self.collate_fn = _check_callable("collate_fn", collate_fn)
        self.worker_init_fn = _check_callable("worker_init_fn", worker_init_fn)
        self.num_workers = _positive_int("num_workers", num_workers, allow_zero=True)
        self.prefetch_factor = _positive_int("prefetch_factor", prefetch_factor)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"DataLoader: timeout should be a non-negative number of seconds, got {timeout!r}")
        self.timeout = timeout
        self.use_buffer_reader = use_buffer_reader
        self.use_shared_memory = bool(use_shared_memory) and self.num_workers > 0
        self.persistent_workers = bool(persistent_workers)
        self.iterable = isinstance(dataset, IterableDataset)
        self.batch_sampler, self.batch_size = self._sampler(batch_sampler, batch_size, shuffle, drop_last)
        self.drop_last = drop_last
        self.auto_collate_batch = self.batch_sampler is not None
        self._iterator = None

    def _sampler(self, batch_sampler, batch_size, shuffle, drop_last):
        if self.iterable and shuffle:
            raise ValueError(f"DataLoader: an IterableDataset cannot be shuffled, got shuffle={shuffle}")
        if self.iterable and batch_sampler is not None:
            raise ValueError("DataLoader: an IterableDataset takes no batch_sampler")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError(
                    "DataLoader: batch_size/shuffle/drop_last should not be set when batch_sampler is "
                    f"given (got batch_size={batch_size!r}, shuffle={shuffle!r}, drop_last={drop_last!r}); "
                    "the batch sampler decides them")
            return batch_sampler, None
        if batch_size is None:
            return None, None
        batch_size = _positive_int("batch_size", batch_size)
        if self.iterable:
            return _StreamSampler(batch_size), batch_size
        return BatchSampler(dataset=self.dataset, batch_size=batch_size, shuffle=bool(shuffle),
                            drop_last=bool(drop_last)), batch_size

    def __len__(self):
        if self.iterable:
            raise ValueError("DataLoader: the length of an IterableDataset is not known")
        return len(self.batch_sampler) if self.auto_collate_batch else len(self.dataset)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        from .multiprocess import MultiProcessIter

        if not self.persistent_workers:
            return MultiProcessIter(self)
        if self._iterator is None or self._iterator.closed:
            self._iterator = MultiProcessIter(self)
        else:
            self._iterator.reset()
        return self._iterator

    def __call__(self):
        return self.__iter__()

    # --- pieces the iterators share -------------------------------------------------------------
    def _index_sampler(self):
        if self.auto_collate_batch:
            return self.batch_sampler
        if self.iterable:
            return itertools.repeat(None)
        return range(len(self.dataset))

    def _fetcher(self):
        collate = self.collate_fn or (default_collate_fn if self.auto_collate_batch else default_convert_fn)
        return make_fetcher(self.dataset, self.iterable, self.auto_collate_batch, collate, self.drop_last)

    def _deliver(self, batches: list):
        """The user's view of ``len(places)`` batches (one in dygraph mode)."""
        if context.in_dynamic_mode():
            from ..eager.tensor import Tensor

            return map_arrays(lambda a: a if isinstance(a, Tensor) else Tensor(a), batches[0])
        batches = [map_arrays(np.asarray, b) for b in batches]
        if not self.return_list:
            return [self._feed_dict(b) for b in batches]
        return batches[0] if len(batches) == 1 else batches

    def _feed_dict(self, batch) -> dict:
        arrays = flat_arrays(batch)
        names = [getattr(v, "name", v) for v in self.feed_list]
        if len(arrays) != len(names):
            raise ValueError(f"DataLoader: a batch holds {len(arrays)} arrays but feed_list names "
                             f"{len(names)} variables ({names}); they must match one to one")
        return dict(zip(names, arrays))

    # --- 1.x constructors (the book helper's module) --------------------------------------------
    @staticmethod
    def from_generator(*args, **kwargs):
        """A loader fed by a Python generator (``set_sample_generator`` and friends); see
        ``headrace.io.generator_loader``."""
        from .generator_loader import from_generator

        return from_generator(*args, **kwargs)

    @staticmethod
    def from_dataset(*args, **kwargs):
        """A loader over a ``fluid`` dataset; see ``headrace.io.generator_loader``."""
        from .generator_loader import from_dataset

        return from_dataset(*args, **kwargs)


def _places(places) -> list:
    if places is None:
        return [None]
    if isinstance(places, (list, tuple)):
        if not places:
            raise ValueError("DataLoader: places is an empty list")
        return list(places)
    return [places]


class _SingleProcessIter:
    """Batches read in the main process, one at a time."""

    def __init__(self, loader):
        self._loader = loader
        self._indices = iter(loader._index_sampler())
        self._fetcher = loader._fetcher()
        self._per_step = 1 if context.in_dynamic_mode() else len(loader.places)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _one(self):
        indices = next(self._indices)     # StopIteration ends the epoch
        if self._loader.iterable:
            return self._fetcher.fetch(indices if indices is not None else 1)
        return self._fetcher.fetch(indices)

    def __next__(self):
        batches = [self._one() for _ in range(self._per_step)]
        return self._loader._deliver(batches)
