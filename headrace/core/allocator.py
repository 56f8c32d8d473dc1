"""Keeping freed memory for reuse: glibc's malloc settings (``FLAGS_cpu_memory_keep_mb``).

Why: headrace's tensors are NumPy arrays, and NumPy takes their memory from the C library's
``malloc``.  A training step frees and allocates the same few-MB arrays again and again; glibc
returns freed memory at the top of its heap to the system once it passes the trim threshold
(128 KiB at first, growing with glibc's dynamic mmap threshold up to 64 MiB) and gives blocks
above its mmap threshold their own ``mmap``, so the next step's arrays touch fresh pages again:
every 4 KiB page a minor page fault the kernel zero-fills.  Measured on the model zoo (2
threads): about 6,600 faults a step on the encoder block (105 -> 88 ms once they are gone),
3,700 on LeNet (48 -> 33 ms), 300-1,400 on the embedding model.  The reference keeps freed CPU
memory in its own allocator for reuse (its ``auto_growth`` strategy); PyTorch's CPU guides
recommend jemalloc/tcmalloc for the same reason.

What: with ``keep_mb`` > 0 (default 64), at import (and when ``set_flags`` changes the flag)
headrace sets, through ``mallopt``:

- ``M_MMAP_THRESHOLD`` = 32 MiB, glibc's own maximum: blocks below it come from a heap, where
  freed memory can be reused, instead of a fresh ``mmap`` each time (glibc's dynamic threshold
  grows to this value anyway once a block that large is freed; setting any parameter turns the
  dynamic adjustment off, so it is set explicitly);
- ``M_TRIM_THRESHOLD`` = ``keep_mb`` MiB: the main heap keeps the free memory at its top until
  that passes ``keep_mb`` MiB (then it returns all of it, as glibc does).

The cost: the process keeps up to ``keep_mb`` MiB of freed memory in the main heap, and up to 64
MiB (the size of glibc's per-thread heaps, which a threshold of 64 MiB or more never trims; their
further heaps are still released when empty) in each thread that allocated such blocks.  (The
top pad is left alone: a pad of 64 MiB would stop glibc from ever shrinking per-thread heaps.)

Left alone: ``keep_mb`` = 0 in the environment (``FLAGS_cpu_memory_keep_mb=0``), a user's own
malloc settings (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_MMAP_MAX_`` or their ``glibc.malloc.*`` entries in ``GLIBC_TUNABLES``), and any C
library other than glibc (musl, macOS, Windows): ``apply`` returns False and the flag only
records the request.  Set to 0 after a value, the trim threshold becomes 0 (freed memory at the
top goes back at once); the mmap threshold stays at 32 MiB (glibc cannot be returned to its
dynamic mode).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_TRIM_THRESHOLD = -1   # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc: the largest it accepts
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_")
_USER_TUNABLES = ("glibc.malloc.trim_threshold", "glibc.malloc.top_pad", "glibc.malloc.mmap_threshold",
                  "glibc.malloc.mmap_max")

_state = {"libc": None, "threshold_set": False}


def _mallopt():
    """glibc's ``mallopt`` (int mallopt(int, int)), or None on another C library."""
    if _state["libc"] is None:
        found = None
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            try:
                found = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
                found.argtypes, found.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            except (OSError, AttributeError):   # pragma: no cover - a glibc without mallopt
                found = None
        _state["libc"] = found or False
    return _state["libc"] or None


def user_settings() -> bool:
    """Whether the environment holds the user's own settings of the parameters ``apply`` sets."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return any(name in os.environ for name in _USER_SETTINGS) or any(name in tunables for name in _USER_TUNABLES)


def apply(keep_mb: int) -> bool:
    """Set glibc's heap to keep up to ``keep_mb`` MiB of freed memory (see the module doc); True
    when glibc took the settings, False when they were left alone."""
    mallopt = _mallopt()
    if mallopt is None or user_settings() or (keep_mb == 0 and not _state["threshold_set"]):
        return False
    if not _state["threshold_set"]:
        if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:   # pragma: no cover - glibc refused
            return False
        _state["threshold_set"] = True
    return mallopt(M_TRIM_THRESHOLD, keep_mb << 20) == 1
