"""Byte accounting of live buffers held by the runtime (current and peak).

Buffers are counted by their owning NumPy allocation: several views of one buffer count once,
and a view keeps its whole base allocation counted, because that is what it keeps alive.

The tracker is thread-safe: places of a data-parallel run count into the same tracker from their
own threads (one lock around each update; uncontended it costs well under a microsecond).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ..ops.kernel import root_of

_ndarray = np.ndarray


class _Ref(weakref.ref):
    """A weak reference to a counted buffer, with its count of holders and its size."""

    __slots__ = ("key", "count", "nbytes")


class MemoryTracker:
    """Counts bytes of distinct live buffers handed to ``acquire`` and not yet ``release``d.

    The tracker holds only weak references: a buffer whose last holder dropped it without a
    ``release`` (a Scope the user let go of, a run interrupted between two statements) stops
    being counted when NumPy frees it.
    """

    __slots__ = ("_live", "current", "peak", "_lock", "_gone")

    def __init__(self):
        self._live: dict[int, _Ref] = {}  # id(root) -> weak reference to root
        self.current = 0
        self.peak = 0
        # reentrant: a buffer freed by the garbage collector while this thread holds the lock
        # calls back into the tracker
        self._lock = threading.RLock()
        self._gone = self._forget

    def acquire(self, arr) -> None:
        if type(arr) is not _ndarray and not isinstance(arr, _ndarray):
            return
        root = arr if arr.base is None else root_of(arr)   # most buffers own their memory
        key = id(root)
        with self._lock:
            ref = self._live.get(key)
            if ref is not None and ref() is root:
                ref.count += 1
                return
            ref = self._live[key] = _Ref(root, self._gone)
            ref.key, ref.count, ref.nbytes = key, 1, root.nbytes
            self.current += ref.nbytes
            if self.current > self.peak:
                self.peak = self.current

    def release(self, arr) -> None:
        self.release_all((arr,))

    def release_all(self, arrays) -> None:
        """``release`` of each of ``arrays`` under one lock (the executor's frees after a step)."""
        live = self._live
        with self._lock:
            for arr in arrays:
                if type(arr) is not _ndarray and not isinstance(arr, _ndarray):
                    continue
                root = arr if arr.base is None else root_of(arr)
                ref = live.get(id(root))
                if ref is None or ref() is not root:
                    continue
                ref.count -= 1
                if ref.count == 0:
                    del live[ref.key]
                    self.current -= ref.nbytes

    def _forget(self, ref) -> None:
        """Weak-reference callback: a counted buffer was freed without being released."""
        with self._lock:
            if self._live.get(ref.key) is ref:
                del self._live[ref.key]
                self.current -= ref.nbytes

    def holds(self, root) -> bool:
        """Whether the buffer ``root`` (an owning array) is counted now."""
        ref = self._live.get(id(root))
        return ref is not None and ref() is root

    def bump(self, rise: int, net: int) -> None:
        """Count a stretch of a run recorded in a ledger (``runtime/ledger.py``): its bytes rose
        by at most ``rise`` above the current count, and changed it by ``net`` in the end."""
        with self._lock:
            if self.current + rise > self.peak:
                self.peak = self.current + rise
            self.current += net

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.current


cpu = MemoryTracker()


def memory_allocated() -> int:
    """Bytes of buffers the runtime holds now (scope tensors and live temporaries)."""
    return cpu.current


def max_memory_allocated() -> int:
    """Peak of ``memory_allocated()`` since start or the last ``reset_max_memory_allocated()``."""
    return cpu.peak


def reset_max_memory_allocated() -> None:
    cpu.reset_peak()
