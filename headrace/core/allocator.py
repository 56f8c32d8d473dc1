"""Keeping freed memory for reuse: glibc's malloc settings (``FLAGS_cpu_memory_keep_mb``).

Why: headrace's tensors are NumPy arrays, and NumPy takes their memory from the C library's
``malloc``.  A training step frees and allocates the same few-MB arrays again and again; glibc
returns a freed block at the top of its heap to the system once the free space there passes its
trim threshold (a few MB, or up to 64 MB as its dynamic threshold grows), and the next step's
arrays touch fresh pages again: every 4 KiB page a minor page fault the kernel zero-fills.
Measured on the model zoo (2 threads): about 6,600 faults a step on the encoder block (105 ->
88 ms once they are gone), 3,700 on LeNet (48 -> 33 ms), 300-1,400 on the embedding model.
The reference keeps freed CPU memory in its own allocator for reuse (its ``auto_growth``
strategy); PyTorch's CPU guides recommend jemalloc/tcmalloc for the same reason.

What: with ``keep_mb`` > 0 (default 64), at import (and when ``set_flags`` changes the flag)
headrace sets, through ``mallopt``:

- ``M_MMAP_THRESHOLD`` = 32 MiB, glibc's own maximum: blocks below it come from the heap, where
  freed memory can be reused, instead of a fresh ``mmap`` each time (glibc's dynamic threshold
  grows to this value anyway once a block that large is freed; setting any parameter turns the
  dynamic adjustment off, so it is set explicitly);
- ``M_TOP_PAD`` = ``keep_mb`` MiB: the heap keeps up to that much free memory at its top instead of
  trimming it (and grows by that much more at a time; untouched pages cost no memory).

The cost: the process keeps up to ``keep_mb`` MiB of freed memory per malloc arena (the main one,
and one per thread that allocated) instead of returning it.  ``keep_mb`` = 0 in the environment
(``FLAGS_cpu_memory_keep_mb=0``) leaves the allocator untouched; set to 0 later, only the top pad
goes back to 0 (the threshold stays at 32 MiB: glibc cannot be returned to its dynamic mode).
A C library other than glibc (musl, macOS, Windows) is left alone: ``apply`` returns False.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TOP_PAD = -2          # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc: the largest it accepts

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


def apply(keep_mb: int) -> bool:
    """Set glibc's heap to keep ``keep_mb`` MiB of freed memory (see the module doc); True when
    glibc took the settings, False when there is no glibc or ``keep_mb`` is 0 before any was set."""
    mallopt = _mallopt()
    if mallopt is None or (keep_mb == 0 and not _state["threshold_set"]):
        return False
    if not _state["threshold_set"]:
        if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:   # pragma: no cover - glibc refused
            return False
        _state["threshold_set"] = True
    return mallopt(M_TOP_PAD, keep_mb << 20) == 1
