"""Matrix products on headrace's own threads: BLAS at one thread, large products split over the
intra-op pool (``ops/parallel.py``).

Why: NumPy's OpenBLAS runs a large GEMM on its own threads, which then spin about 0.1 s waiting
for more work.  On a machine with as many cores as threads, those spinning threads hold the cores
the intra-op pool needs for the element-wise, normalisation and convolution-copy kernels between
two products.  So the kernels' products go through ``matmul`` here: while one runs, OpenBLAS is
set to one thread (its threads stay asleep), and a product of at least ``SPLIT_MACS``
multiply-adds is cut into one piece per thread, each an ordinary NumPy matmul (which releases
the GIL) on a slice of the operands:

- a batched product (output rank > 2) along its first batch axis: each matrix of the batch is
  the same BLAS call as before;
- a 2-D product along its output rows (a slice of ``a``) or, when it has more columns than
  rows, its output columns (a column slice of ``b``: BLAS reads it through its leading dimension,
  no copy); pieces start at multiples of ``_ALIGN``.

Results: each piece is one single-threaded BLAS call, and the pieces depend only on the
operands' shapes and the thread count, so a product gives the same bits on every run, in every
mode (static, eager, with or without passes) and whether or not the pool is free (a busy pool
runs the same pieces one after the other).  Like BLAS's own threading they may differ in the last
bits between thread counts: OpenBLAS's kernels on x86-64 sum some row or column ranges of a call
in another order than the whole call (measured: a small last piece, or double precision, can
change a bit; the split along 16-aligned bounds keeps the zoo's float32 products identical to one
call, and OpenBLAS's own 1- and 2-thread GEMMs differ for some shapes too).  Products at
``FLAGS_paddle_num_threads`` 1 run whole, still with BLAS at one thread.

When the BLAS is not an OpenBLAS whose thread count NumPy's extension exposes (MKL, Accelerate,
BLIS builds, an OpenMP-threaded OpenBLAS, whose count is per calling thread), ``matmul`` is plain
``np.matmul`` and BLAS keeps its own threads.  The BLAS thread
count is changed only while a product of headrace's runs (process-wide: a product another thread
of the user's runs at the same moment also gets one thread) and restored after the last
concurrent one ends, unless the count was changed from that 1 meanwhile (threadpoolctl in another
thread: its setting stays; a limit of 1 set meanwhile is not told apart from ours and is undone);
products too small for OpenBLAS to thread (``_BLAS_THREADED_MACS``) never touch it.  A Ctrl-C
that cuts that bookkeeping short can leave BLAS at one thread until the next product of
headrace's starts (it finds the interrupted product's token dead and restores the count).
NumPy computes ``a @ a.T`` (the same buffer) as a symmetric product (syrk); split, the pieces are
ordinary GEMMs: same values, last bits may differ.
"""
from __future__ import annotations

import ctypes
import os
import threading
import weakref

import numpy as np

from . import parallel
from .parallel import bounds

SPLIT_MACS = 1 << 22            # multiply-adds from which a product is split (bench/gemm_split.py)
_BLAS_THREADED_MACS = 1 << 18   # OpenBLAS threads a GEMM above 65536 * GEMM_MULTITHREAD_THRESHOLD (4)
_ALIGN = 16                     # rows/columns per piece are multiples of this
_MIN_PIECE = 64                 # a product with fewer rows/columns than two of these runs whole


def _openblas_threads():
    """(get, set) of the thread count of the OpenBLAS NumPy is linked with, or None."""
    try:
        from numpy._core import _multiarray_umath as umath   # NumPy >= 2
    except ImportError:   # pragma: no cover - NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    try:
        lib = ctypes.CDLL(umath.__file__)   # symbol look-up searches the module's dependencies too
    except OSError:   # pragma: no cover - a platform without dlopen of extension modules
        return None
    for prefix in ("scipy_openblas_", "openblas_"):
        for suffix in ("64_", ""):
            get = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
            layer = getattr(lib, f"{prefix}get_parallel{suffix}", None)
            if get is None or put is None or layer is None:
                continue
            get.restype, put.argtypes, put.restype, layer.restype = ctypes.c_int, [ctypes.c_int], None, ctypes.c_int
            # 1: its own pthreads pool, one count for the process.  (An OpenMP build keeps a count
            # per calling thread, which the pool's workers would not see; sequential: nothing to do.)
            return (get, put) if layer() == 1 else None
    return None


_blas = _openblas_threads()
_lock = threading.Lock()
_active = []        # weak references to the tokens of the products running now, in any thread
_saved = 1          # the BLAS thread count to restore when the last one ends


def _after_fork_in_child():
    """The products running in other threads of the parent do not exist here: restore the count
    they would have restored, with a fresh lock."""
    global _lock
    if _active and _saved != 1:
        _blas[1](_saved)
    _lock = threading.Lock()
    _active.clear()


if _blas is not None:
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Token:
    """One running product (weakly referenced: it dies with the product's frame)."""
    __slots__ = ("__weakref__",)


def _restore_if_last():
    if _saved != 1 and _blas[0]() == 1:   # unless someone (threadpoolctl) changed our 1 meanwhile
        _blas[1](_saved)


def _enter(token):
    """``token``'s product runs: BLAS to one thread if it is the only one.  A product whose
    ``_leave`` a Ctrl-C cut short has a dead token (its frame is gone): it is dropped here, and
    the count restored first if it was the last one."""
    global _saved
    with _lock:
        if _active and not any(ref() is not None for ref in _active):
            _restore_if_last()
            _active.clear()
        if not _active:
            _saved = _blas[0]()
        _active.append(weakref.ref(token))
        if len(_active) == 1 and _saved != 1:
            _blas[1](1)


def _leave(token):
    """``token``'s product has ended: the saved count back when it was the last one."""
    with _lock:
        live = [ref for ref in _active if ref() is not None and ref() is not token]
        if not live:
            _restore_if_last()
        _active[:] = live


def available() -> bool:
    """Whether products run on headrace's threads (an OpenBLAS whose threads can be set)."""
    return _blas is not None


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, computed as described above (operands of rank < 2, an
    ``out`` overlapping an operand, mismatched shapes: ``np.matmul`` itself)."""
    a_shape, b_shape = a.shape, b.shape
    if _blas is None or len(a_shape) < 2 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        return np.matmul(a, b, out=out)
    macs = a_shape[-2] * a_shape[-1] * b_shape[-1]
    if len(a_shape) == 2 == len(b_shape):   # the common case first: small ones cost one test more
        if macs <= _BLAS_THREADED_MACS:
            return np.matmul(a, b, out=out)
        shape = (a_shape[0], b_shape[1])
    else:
        try:
            shape = np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1])
        except ValueError:
            return np.matmul(a, b, out=out)   # NumPy's own message
        for d in shape[:-2]:
            macs *= d
        if macs <= _BLAS_THREADED_MACS:
            return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty(shape, np.result_type(a, b))
    elif np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return np.matmul(a, b, out=out)   # NumPy copies an overlapping operand first
    pieces = _pieces(a, b, out) if macs >= SPLIT_MACS and parallel.num_threads() > 1 else None
    with blas_on_one_thread():
        if pieces is None:
            np.matmul(a, b, out=out)
        else:
            parallel.run_pieces(_piece, pieces)
    return out


class blas_on_one_thread:
    """``with blas_on_one_thread():`` the products made inside (on any thread, e.g. pieces of a
    kernel on the intra-op pool, each calling ``np.matmul`` itself) run with BLAS at one thread,
    as ``matmul``'s own pieces do; nothing when the BLAS's threads cannot be set."""
    __slots__ = ("_token",)

    def __enter__(self):
        if _blas is not None:
            self._token = _Token()
            _enter(self._token)
        return self

    def __exit__(self, *exc):
        if _blas is not None:
            _leave(self._token)


def _piece(a, b, out):
    np.matmul(a, b, out=out)


def _pieces(a, b, out):
    """(a, b, out) slices, one per thread, or None when the product does not split."""
    count = parallel.num_threads()
    while out.ndim > 2 and out.shape[0] == 1:   # a batch of one: its matrix
        a, b, out = (x[0] if x.ndim == out.ndim else x for x in (a, b, out))
    if out.ndim > 2:
        size = out.shape[0]
        if size < 2:
            return None
        a_split = a.ndim == out.ndim and a.shape[0] == size
        b_split = b.ndim == out.ndim and b.shape[0] == size
        return [(a[lo:hi] if a_split else a, b[lo:hi] if b_split else b, out[lo:hi])
                for lo, hi in bounds(size, count)]
    m, n = out.shape
    if m >= n:
        if m < 2 * _MIN_PIECE:
            return None
        return [(a[lo:hi], b, out[lo:hi]) for lo, hi in bounds(m, count, _ALIGN)]
    if n < 2 * _MIN_PIECE:
        return None
    return [(a, b[:, lo:hi], out[:, lo:hi]) for lo, hi in bounds(n, count, _ALIGN)]

