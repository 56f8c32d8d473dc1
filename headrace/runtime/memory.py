"""Byte accounting of live buffers held by the runtime (current and peak).

Buffers are counted by their owning NumPy allocation: several views of one buffer count once,
and a view keeps its whole base allocation counted, because that is what it keeps alive.

The tracker is thread-safe: places of a data-parallel run count into the same tracker from their
own threads (one lock around each update; uncontended it costs well under a microsecond).
"""
from __future__ import annotations

import threading

import numpy as np


def _root(arr: np.ndarray) -> np.ndarray:
    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


class MemoryTracker:
    """Counts bytes of distinct live buffers handed to ``acquire`` and not yet ``release``d."""

    __slots__ = ("_live", "current", "peak", "_lock")

    def __init__(self):
        self._live: dict[int, list] = {}  # id(root) -> [root, refcount]
        self.current = 0
        self.peak = 0
        self._lock = threading.Lock()

    def acquire(self, arr) -> None:
        if not isinstance(arr, np.ndarray):
            return
        root = _root(arr)
        with self._lock:
            entry = self._live.get(id(root))
            if entry is not None:
                entry[1] += 1
                return
            self._live[id(root)] = [root, 1]
            self.current += root.nbytes
            if self.current > self.peak:
                self.peak = self.current

    def release(self, arr) -> None:
        if not isinstance(arr, np.ndarray):
            return
        root = _root(arr)
        with self._lock:
            entry = self._live.get(id(root))
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                del self._live[id(root)]
                self.current -= root.nbytes

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
