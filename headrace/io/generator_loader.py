"""``DataLoader.from_generator`` / ``fluid.io.PyReader``: batches from a Python generator, read
ahead in a thread.

Three ways to give the data (the reference's names and meaning):

- ``set_sample_generator(reader, batch_size, drop_last=True, places=None)``: ``reader()`` yields
  samples (one field per feed variable); they are grouped into batches of ``batch_size``;
- ``set_sample_list_generator(reader, places=None)``: ``reader()`` yields lists of samples (what
  ``paddle.batch`` makes);
- ``set_batch_generator(reader, places=None)``: ``reader()`` yields batches, one array (or
  LoDTensor) per feed variable.

Static mode needs ``feed_list`` and ``capacity``; iterating yields, per step, one item per place:
a ``{name: array}`` dict (``return_list=False``, what ``Executor.run(feed=...)`` takes) or a list of
arrays (``return_list=True``).  With several places each step takes one batch per place (a last
step without a batch for every place is dropped when ``drop_last``, else it is an error).  Eager
mode yields each batch as a list of Tensors.  Samples are converted as ``fluid.DataFeeder`` does
(the feed variables' dtypes and shapes); batches from ``set_batch_generator`` are passed as given
(the Executor checks them against the program).  A background thread keeps up to ``capacity``
batches ready; an exception in the user's generator is raised where the loop reads the next batch.

Not supported (clear errors): the non-iterable mode (``iterable=False`` with ``start()``/``reset()``
and the Executor reading the queue until ``EOFException``: headrace programs have no reader ops),
``use_multiprocess=True``, ``from_dataset`` (headrace has no DatasetFactory datasets) and
feed variables with ``lod_level > 0``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core import context
from ..reader.batch import batch as _batch
from ..reader.data_feeder import DataFeeder
from ..reader.decorator import read_ahead
from ..runtime.scope import LoDTensor

__all__ = ["GeneratorLoader", "PyReader", "from_dataset", "from_generator"]


def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                   use_multiprocess=False, drop_last=True):
    """A loader fed by a Python generator (see the module docstring)."""
    return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list, use_multiprocess,
                           drop_last)


def from_dataset(dataset, places, drop_last=True):
    """Not supported: headrace has no ``fluid.DatasetFactory`` (InMemoryDataset/QueueDataset)."""
    raise NotImplementedError(
        "DataLoader.from_dataset is not supported by headrace: it reads the InMemoryDataset/QueueDataset "
        "datasets of fluid's DatasetFactory, which headrace does not have; use the DataLoader of paddle.io "
        "over a Dataset, or DataLoader.from_generator")


class GeneratorLoader:
    """What ``from_generator`` returns; ``for data in loader():`` (or ``for data in loader:``)."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                 use_multiprocess=False, drop_last=True):
        self._eager = context.in_dynamic_mode()
        if not iterable:
            raise NotImplementedError(
                "DataLoader.from_generator(iterable=False) is not supported by headrace: the non-iterable mode "
                "(start()/reset(), the Executor reading the queue until EOFException) needs reader ops in the "
                "program. Use iterable=True and `for data in loader(): exe.run(feed=data, ...)`")
        if use_multiprocess:
            raise NotImplementedError("DataLoader.from_generator(use_multiprocess=True) is not supported by "
                                      "headrace; for worker processes use the DataLoader of paddle.io with num_workers > 0")
        if not self._eager:
            if not capacity:
                raise ValueError("Please give value to capacity.")
            if not feed_list:
                raise ValueError("Feed list must be given under static mode.")
        elif not return_list:
            warnings.warn("Please NOTE: DygraphGeneratorLoader supports returning as list only. Change to return as list.")
            return_list = True
        self._feed_list = list(feed_list or [])
        self._feeder = DataFeeder(self._feed_list, None) if self._feed_list and not self._eager else None
        self._capacity = int(capacity) if capacity else 2
        self._return_list = return_list
        self._drop_last = drop_last
        self._batches = None
        self._places = None
        self._iterator = None

    @property
    def iterable(self) -> bool:
        return True

    # --- the three data sources -------------------------------------------------------------------
    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """Samples from ``reader()``, grouped into batches of ``batch_size``."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be larger than 0, got {batch_size}")
        return self.set_sample_list_generator(_batch(reader, batch_size, drop_last=drop_last), places)

    def set_sample_list_generator(self, reader, places=None):
        """Lists of samples from ``reader()`` (e.g. ``paddle.batch(...)``), one batch each."""
        feeder = self._feeder

        def batches():
            for samples in reader():
                if feeder is not None:
                    feed = feeder.feed(samples)
                    yield [feed[name] for name in feeder.feed_names]
                else:
                    yield [np.asarray(field) for field in zip(*samples)]

        return self.set_batch_generator(batches, places)

    def set_batch_generator(self, reader, places=None):
        """Batches from ``reader()``: one array per feed variable each."""
        if not callable(reader):
            raise TypeError(f"DataLoader: the generator must be callable (a reader), got {type(reader).__name__}")
        places = list(places) if isinstance(places, (list, tuple)) else ([places] if places is not None else None)
        if places is None and not self._eager:
            raise ValueError("Places cannot be None when DataLoader is iterable")
        if self._eager and places is not None and len(places) != 1:
            raise ValueError("Number of places must be 1 in dygraph mode")
        self._batches, self._places = reader, places or [None]
        return self

    # --- iteration ---------------------------------------------------------------------------------
    def __call__(self):
        return self

    def __iter__(self):
        if self._batches is None:
            raise RuntimeError("Data source of DataLoader has not set yet: call set_sample_generator, "
                               "set_sample_list_generator or set_batch_generator first")
        self._iterator = _steps(self, read_ahead(self._batches, self._capacity, "DataLoader")())
        return self

    def __next__(self):
        if self._iterator is None:
            raise RuntimeError("iterate the DataLoader with `for data in loader():` before calling next()")
        return next(self._iterator)

    def _arrays(self, batch) -> list:
        if not isinstance(batch, (list, tuple)):
            raise TypeError(f"DataLoader: a batch must be a list or tuple of arrays (one per feed variable), "
                            f"got {type(batch).__name__}")
        if self._feed_list and len(batch) != len(self._feed_list):
            names = [v.name for v in self._feed_list]
            raise ValueError(f"DataLoader: a batch holds {len(batch)} arrays, but feed_list has {len(names)} "
                             f"variables {names}")
        return [_array(item) for item in batch]

    def _output(self, arrays):
        if self._eager:
            from ..eager.tensor import Tensor

            return [Tensor(a) for a in arrays]
        if self._return_list:
            return arrays
        return {v.name: a for v, a in zip(self._feed_list, arrays)}


def _steps(loader, batches):
    """One item per place per step (eager: the batch itself)."""
    group = []
    for batch in batches:
        arrays = loader._arrays(batch)
        if loader._eager:
            yield loader._output(arrays)
            continue
        group.append(loader._output(arrays))
        if len(group) == len(loader._places):
            yield group
            group = []
    if group and not loader._drop_last:
        raise ValueError(f"DataLoader: the last step has {len(group)} batches for {len(loader._places)} places; "
                         "use drop_last=True or give a number of batches divisible by the number of places")


def _array(item) -> np.ndarray:
    if isinstance(item, LoDTensor):
        return np.array(item)
    try:
        arr = np.asarray(item)
    except ValueError:   # NumPy >= 1.24 refuses ragged nesting itself
        arr = np.empty(0, dtype=object)
    if arr.dtype == object:
        raise TypeError("Failed to convert input data to a regular ndarray: usually this means the input data "
                        "contains nested lists with different lengths; check the generator given to "
                        "set_batch_generator (sequences are not supported: pad them to one length)")
    return arr


class PyReader:
    """``fluid.io.PyReader``: the 1.x name of ``DataLoader.from_generator`` (``decorate_*`` methods)."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False):
        self._loader = from_generator(feed_list, capacity, use_double_buffer, iterable, return_list)

    @property
    def iterable(self) -> bool:
        return self._loader.iterable

    def __call__(self):
        return self._loader()

    def __iter__(self):
        return iter(self._loader)

    def __next__(self):
        return next(self._loader)

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        self._loader.set_batch_generator(reader, places)
