"""Reader decorators of the 1.x data path (``paddle.reader.*``, also ``fluid.io.*``).

A *reader* is a callable with no arguments that returns an iterable of samples; a decorator takes
readers and returns a new reader.  Semantics follow the reference's ``paddle/reader/decorator.py``
(buffer sizes, the order ``shuffle`` flushes in, ``compose`` flattening tuples, ``firstn``
stopping early).  Where we deliberately differ:

- ``buffered`` and ``xmap_readers`` re-raise, in the consumer, an exception raised by the
  wrapped reader or the mapper (the reference's worker thread dies and the consumer blocks for
  ever); the traceback of the worker is kept as ``__cause__``.
- ``xmap_readers(order=True)`` reorders finished samples in the consumer instead of busy-waiting
  in each worker thread; the output order is the same (the input order).
- ``xmap_readers`` and ``buffered`` stop their threads when the consumer stops early (closing
  the generator), instead of leaving them blocked on a full queue.
"""
from __future__ import annotations

import itertools
import queue
import random
import threading

__all__ = ["ComposeNotAligned", "buffered", "cache", "chain", "compose", "firstn", "map_readers",
           "shuffle", "xmap_readers"]


def _check_reader(reader, api: str, what: str = "reader"):
    if not callable(reader):
        raise TypeError(f"{api}(): {what} must be a reader (a callable returning an iterable of samples), "
                        f"got {type(reader).__name__}")


def _positive_int(value, api: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{api}(): {what} must be a positive int, got {value!r}")
    return value


def cache(reader):
    """Read ``reader`` once, now, into memory; the new reader replays those samples each pass."""
    _check_reader(reader, "cache")
    samples = tuple(reader())

    def cached_reader():
        yield from samples

    return cached_reader


def map_readers(func, *readers):
    """A reader yielding ``func(a, b, ...)`` for the i-th samples ``a, b, ...`` of ``readers``
    (stops with the shortest reader, as Python's ``map``)."""
    if not callable(func):
        raise TypeError(f"map_readers(): func must be callable, got {type(func).__name__}")
    for r in readers:
        _check_reader(r, "map_readers")

    def mapped_reader():
        yield from map(func, *[r() for r in readers])

    return mapped_reader


def shuffle(reader, buf_size):
    """Shuffle within windows of ``buf_size`` samples: fill the buffer, shuffle it (Python's
    ``random``), yield it all, repeat; the last partial buffer is shuffled too."""
    _check_reader(reader, "shuffle")
    buf_size = _positive_int(buf_size, "shuffle", "buf_size")

    def shuffled_reader():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            random.shuffle(buf)
            yield from buf

    return shuffled_reader


def chain(*readers):
    """A reader yielding all samples of the first reader, then of the second, and so on."""
    for r in readers:
        _check_reader(r, "chain")

    def chained_reader():
        yield from itertools.chain(*[r() for r in readers])

    return chained_reader


class ComposeNotAligned(ValueError):
    """``compose``: the composed readers yield different numbers of samples."""


def _as_tuple(sample) -> tuple:
    return sample if isinstance(sample, tuple) else (sample,)


def compose(*readers, check_alignment=True):
    """A reader whose i-th sample joins the i-th samples of ``readers`` into one flat tuple
    (a tuple sample contributes its items: ``(1, 2)``, ``3``, ``(4, 5)`` → ``(1, 2, 3, 4, 5)``).

    With ``check_alignment`` (default) readers of different lengths raise ``ComposeNotAligned``;
    without it, the output stops with the shortest reader.
    """
    for r in readers:
        _check_reader(r, "compose")

    def composed_reader():
        iterators = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*iterators):
                yield sum(map(_as_tuple, outputs), ())
            return
        missing = object()
        for outputs in itertools.zip_longest(*iterators, fillvalue=missing):
            if any(o is missing for o in outputs):
                raise ComposeNotAligned("outputs of readers are not aligned.")
            yield sum(map(_as_tuple, outputs), ())

    return composed_reader


def firstn(reader, n):
    """A reader yielding at most the first ``n`` samples of ``reader``."""
    _check_reader(reader, "firstn")

    def firstn_reader():
        yield from itertools.islice(reader(), n)

    return firstn_reader


class _End:
    """The end-of-stream marker a worker thread puts on a queue (with the error that ended it)."""

    def __init__(self, error=None):
        self.error = error


class _Stop:
    """Set when the consumer goes away: workers stop putting and return."""

    def __init__(self):
        self.event = threading.Event()

    def put(self, q, item) -> bool:
        """Put ``item`` on ``q`` unless the consumer stopped; True if it was put."""
        while not self.event.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False


def _raise_worker_error(error, api: str):
    raise RuntimeError(f"{api}: a worker thread raised {type(error).__name__}: {error}") from error


def buffered(reader, size):
    """A reader that reads ``reader`` ahead in a thread into a queue of at most ``size`` samples."""
    _check_reader(reader, "buffered")
    return read_ahead(reader, size, "buffered")


def read_ahead(reader, size, api: str):
    """``buffered``'s reader; an error of ``reader`` is re-raised naming ``api``."""

    def fill(stop, q):
        try:
            for sample in reader():
                if not stop.put(q, sample):
                    return
        except BaseException as exc:  # noqa: BLE001  (handed to the consumer)
            stop.put(q, _End(exc))
            return
        stop.put(q, _End())

    def buffered_reader():
        q = queue.Queue(maxsize=size)
        stop = _Stop()
        worker = threading.Thread(target=fill, args=(stop, q), daemon=True)
        worker.start()
        try:
            while True:
                item = q.get()
                if isinstance(item, _End):
                    if item.error is not None:
                        _raise_worker_error(item.error, api)
                    return
                yield item
        finally:
            stop.event.set()

    return buffered_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """Map the samples of ``reader`` with ``mapper`` in ``process_num`` threads (the reference
    uses threads too); queues hold at most ``buffer_size`` samples.  ``order=True`` keeps the
    input order, else samples come out as they finish."""
    if not callable(mapper):
        raise TypeError(f"xmap_readers(): mapper must be callable, got {type(mapper).__name__}")
    _check_reader(reader, "xmap_readers")
    process_num = _positive_int(process_num, "xmap_readers", "process_num")
    buffer_size = _positive_int(buffer_size, "xmap_readers", "buffer_size")

    def xreader():
        in_q, out_q, stop = queue.Queue(buffer_size), queue.Queue(buffer_size), _Stop()
        threads = [threading.Thread(target=_xmap_read, args=(reader, in_q, out_q, stop, process_num),
                                    daemon=True)]
        threads += [threading.Thread(target=_xmap_map, args=(mapper, in_q, out_q, stop), daemon=True)
                    for _ in range(process_num)]
        for t in threads:
            t.start()
        try:
            yield from _xmap_collect(out_q, process_num, order)
        finally:
            stop.event.set()

    return xreader


def _xmap_read(reader, in_q, out_q, stop, workers):
    try:
        for index, sample in enumerate(reader()):
            if not stop.put(in_q, (index, sample)):
                return
    except BaseException as exc:  # noqa: BLE001  (handed to the consumer)
        stop.put(out_q, _End(exc))
    for _ in range(workers):
        stop.put(in_q, _End())


def _xmap_map(mapper, in_q, out_q, stop):
    while not stop.event.is_set():
        try:
            item = in_q.get(timeout=0.05)
        except queue.Empty:
            continue
        if isinstance(item, _End):
            stop.put(out_q, item)
            return
        index, sample = item
        try:
            result = mapper(sample)
        except BaseException as exc:  # noqa: BLE001  (handed to the consumer)
            stop.put(out_q, _End(exc))
            return
        stop.put(out_q, (index, result))


def _xmap_collect(out_q, workers, order):
    finished, waiting, next_index = 0, {}, 0
    while finished < workers:
        item = out_q.get()
        if isinstance(item, _End):
            if item.error is not None:
                _raise_worker_error(item.error, "xmap_readers")
            finished += 1
            continue
        index, result = item
        if not order:
            yield result
            continue
        waiting[index] = result
        while next_index in waiting:
            yield waiting.pop(next_index)
            next_index += 1
