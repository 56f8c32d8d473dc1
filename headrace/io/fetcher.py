"""Turning index batches into batches of data, the same in the main process and in a worker.

A map-style dataset is read at each index of the batch; an iterable one is read ``batch_size``
items further. Either way the samples go through the collate function. An exception while
reading a sample gets a note naming the sample (its dataset index, or its position in the
stream); a shape mismatch in the default collate names the dataset index of the odd sample.
"""
from __future__ import annotations

from .collate import CollateShapeError


def _note(exc: BaseException, text: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(text)


class MapFetcher:
    """``fetch(indices)``: the collated samples at ``indices`` (or, without automatic batching,
    the converted sample at the single index)."""

    def __init__(self, dataset, auto_collate, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collate = auto_collate
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def _read(self, index):
        try:
            return self.dataset[index]
        except Exception as exc:
            _note(exc, f"(DataLoader: while reading sample {index!r} of the dataset)")
            raise

    def fetch(self, indices):
        if not self.auto_collate:
            return self.collate_fn(self._read(indices))
        indices = list(indices)
        samples = [self._read(i) for i in indices]
        return _collate(self.collate_fn, samples, indices)


def _collate(collate_fn, samples, indices):
    try:
        return collate_fn(samples)
    except CollateShapeError as exc:
        if exc.position is None or indices is None:
            raise
        raise CollateShapeError(f"{exc}; sample {exc.position} of the batch is dataset index "
                                f"{indices[exc.position]!r}, sample 0 is dataset index {indices[0]!r} "
                                f"(the batch's indices: {indices})", exc.position, exc.field) from None


class IterableFetcher:
    """``fetch(batch_size)``: the next ``batch_size`` items of the dataset's iterator, collated
    (``StopIteration`` when it is exhausted, or when ``drop_last`` and fewer are left)."""

    def __init__(self, dataset, auto_collate, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collate = auto_collate
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.count = 0      # items read so far (the position of the next one in the stream)

    def _next(self):
        try:
            item = next(self.iterator)
        except StopIteration:
            raise
        except Exception as exc:
            _note(exc, f"(DataLoader: while reading item {self.count} of the IterableDataset)")
            raise
        self.count += 1
        return item

    def fetch(self, batch_size):
        if not self.auto_collate:
            return self.collate_fn(self._next())
        start = self.count
        samples = []
        for _ in range(batch_size):
            try:
                samples.append(self._next())
            except StopIteration:
                break
        if not samples or (self.drop_last and len(samples) < batch_size):
            raise StopIteration
        positions = [f"stream item {start + k}" for k in range(len(samples))]
        return _collate(self.collate_fn, samples, positions)


def make_fetcher(dataset, iterable, auto_collate, collate_fn, drop_last):
    kind = IterableFetcher if iterable else MapFetcher
    return kind(dataset, auto_collate, collate_fn, drop_last)
