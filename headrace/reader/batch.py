"""``paddle.batch``: group the samples of a reader into lists of ``batch_size``."""
from __future__ import annotations

__all__ = ["batch"]


def batch(reader, batch_size, drop_last=False):
    """A batch reader: lists of ``batch_size`` consecutive samples of ``reader``; the last, shorter
    list is yielded unless ``drop_last``.  ``batch_size`` must be a positive integer (ValueError,
    as the reference)."""
    if not callable(reader):
        raise TypeError(f"batch(): reader must be a reader (a callable returning an iterable of samples), "
                        f"got {type(reader).__name__}")
    size = int(batch_size)
    if size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got batch_size={size}")

    def batch_reader():
        items = []
        for sample in reader():
            items.append(sample)
            if len(items) == size:
                yield items
                items = []
        if items and not drop_last:
            yield items

    return batch_reader
