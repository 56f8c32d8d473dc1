"""Intra-op parallelism: one large element-wise or row-wise kernel split over a few threads.

NumPy releases the GIL inside its ufunc loops on large arrays, so pieces of one kernel run by
several threads use several cores.  ``chunked(fn, outs, *ins)`` splits every operand along its
leading axes into contiguous pieces, runs ``fn(*in_pieces, *out_pieces)`` on each (the caller
runs the first piece itself, a small persistent pool the others) and returns ``outs``.

Results are bit-identical to one call on the whole arrays, for any thread count: every output
element is computed from the same inputs by the same arithmetic in the same order, because

1. pieces split only leading axes the caller declares independent: ``keep`` trailing axes (the
   ones a row-wise kernel reduces over) are never split, so no reduction changes its order;
2. when every operand has the output's shape and is C-contiguous, the arrays are split flat at
   multiples of ``_ALIGN`` elements, so each piece starts at the same SIMD lane and memory
   alignment as in the whole array (NumPy's vector loops may treat a ragged tail differently);
3. otherwise (broadcast operands, e.g. a bias row) the pieces are whole rows of the merged leading
   axes, and NumPy's inner loop runs over the same row in either case.

The thread count is ``FLAGS_paddle_num_threads`` (``paddle.set_flags``; default: the BLAS/OpenMP
thread setting, else the CPU count, at most 8).  No piece is smaller than ``min_elements`` (the
measured break-even of handing work to a thread), so small kernels run serially, in the caller.
One kernel at a time uses the pool: a call made while another one holds it (a nested call, or a
kernel of another data-parallel place running in another thread) runs serially.  An exception in
any piece is re-raised in the caller once every piece has finished.  Pieces on workers run under
the caller's ``np.errstate`` (NumPy keeps it per thread), so an overflow raises, warns or passes
as in one thread.  After ``fork`` (DataLoader workers) the child starts a fresh pool on its first
parallel call.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
import time
import weakref
from _thread import allocate_lock as _allocate_lock

import numpy as np

from ..core import flags

MIN_ELEMENTS = 1 << 16   # elements per piece below which a thread does not pay (bench: parallel_kernels)
_ALIGN = 64              # flat pieces start at multiples of this many elements
PIECES_PER_THREAD = 4    # pieces handed out one at a time: a thread without a core leaves its share


class _Batch:
    """The pieces of one call, taken one at a time by whichever thread is free (the caller and
    the pool's workers), and what came of them.  ``active`` counts the workers inside the batch
    (workers are never interrupted, so the count is exact); ``cancelled`` stops them taking
    pieces (the caller was interrupted: ``_run_batch``)."""

    __slots__ = ("fn", "pieces", "errors", "taken", "finished", "last", "done", "complete", "errstate",
                 "active", "cancelled")

    def __init__(self, fn, pieces):
        self.fn, self.pieces, self.errors = fn, pieces, {}
        self.errstate = np.geterr()   # NumPy's error state is per thread: workers take the caller's
        self.taken, self.finished, self.last = itertools.count(), itertools.count(), len(pieces) - 1
        # held until the thread finishing the last piece releases it: a plain lock, whose
        # acquire a Ctrl-C interrupts cleanly (threading.Event.wait can turn one into
        # "RuntimeError: release unlocked lock" inside threading.Condition)
        self.done = _allocate_lock()
        self.done.acquire()
        self.complete = False     # set (before ``done`` is released) once every piece has finished
        self.active, self.cancelled = 0, False

    def run(self):
        """Run pieces until none is left; the thread finishing the last one releases ``done``.
        (``next`` of an ``itertools.count`` is atomic under the GIL: each piece runs once.)"""
        with np.errstate(**self.errstate):
            self._run()

    def work(self):
        """``run`` in a pool worker, counted in ``active`` (before it looks at ``cancelled``)."""
        self.active += 1
        try:
            self.run()
        finally:
            self.active -= 1

    def _run(self):
        while not self.cancelled and (index := next(self.taken)) <= self.last:
            try:
                self.fn(*self.pieces[index])
            except BaseException as exc:   # noqa: BLE001 - re-raised in the caller
                self.errors[index] = exc
            if next(self.finished) == self.last:
                self.complete = True
                self.done.release()

    def close(self):
        """The exception to raise, or None, once no worker runs a piece any more (a Ctrl-C
        inside a piece, else the first failing piece's exception, in piece order);
        drops the pieces, ``fn`` and errors, which the batch's copies still queued for workers
        that were busy would otherwise keep alive (and with them the call's arrays)."""
        errors, error = self.errors, None
        if errors:   # (a lower piece's error must not swallow a Ctrl-C: a loop catching it would go on)
            error = next((errors[i] for i in sorted(errors) if not isinstance(errors[i], Exception)),
                         errors[min(errors)])
        self.fn = self.pieces = self.errors = None
        return error


class _Pool:
    """Daemon worker threads, each taking a batch from one queue and running its pieces."""

    def __init__(self):
        self.jobs = queue.SimpleQueue()
        self.workers = []

    def ensure(self, count):
        workers = self.workers
        if workers and workers[-1].ident is None:   # appended, then a Ctrl-C before its start()
            workers.pop()
        while len(self.workers) < count:
            worker = threading.Thread(target=self._work, name=f"headrace-intra-op-{len(self.workers)}",
                                      daemon=True)
            self.workers.append(worker)
            worker.start()

    def _work(self):
        """Serve batches; a worker that ends (an error escaping a job) takes itself off the list,
        so the next call starts another (not polled with ``is_alive``, whose wait a Ctrl-C can
        turn into a live thread marked dead in CPython 3.11)."""
        get = self.jobs.get
        try:
            while True:
                get().work()
        finally:
            try:
                self.workers.remove(threading.current_thread())
            except ValueError:   # (taken off already: never started, per ``ensure``)
                pass


class _Token:
    """A call holding the pool (weakly referenced from ``_holder``: it dies with the call's frame)."""
    __slots__ = ("__weakref__",)


_pool = _Pool()
_FREE = weakref.ref(_Token())   # a dead reference: the pool is free
_holder = [_FREE]               # the token of the call holding the pool (``_take_pool``)
_guard = threading.Lock()       # makes looking at and setting ``_holder`` one step for other threads


def _after_fork_in_child():
    global _pool, _guard
    _pool, _guard = _Pool(), threading.Lock()   # the parent's worker threads do not exist here
    _holder[0] = _FREE


def pool_taken() -> bool:
    """Whether a call holds the pool now (its token is alive)."""
    return _holder[0]() is not None


os.register_at_fork(after_in_child=_after_fork_in_child)


def num_threads() -> int:
    """The threads one kernel may use: ``FLAGS_paddle_num_threads``."""
    return flags.num_threads()


def worth(size: int) -> bool:
    """Whether a kernel over ``size`` elements may split (more than one thread, at least two
    pieces of ``MIN_ELEMENTS``): kernels check it before preparing a split."""
    return size >= 2 * MIN_ELEMENTS and flags.num_threads() > 1


def bounds(size, count, align=1):
    """``range(size)`` cut into at most ``count`` contiguous ``(start, stop)`` pieces of equal
    length (the last one may be shorter), each starting at a multiple of ``align``."""
    step = -(-size // count)
    step = -(-step // align) * align
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def split_range(fn, size, elements):
    """``fn(start, stop)`` over contiguous pieces of ``range(size)`` covering it, on up to
    ``num_threads()`` threads when ``elements`` (the work's size) is worth it (pieces of at least
    ``MIN_ELEMENTS``, up to ``PIECES_PER_THREAD`` per thread, as ``chunked``)."""
    threads = num_threads()
    count = min(threads * PIECES_PER_THREAD, elements // MIN_ELEMENTS, size)
    if threads < 2 or count <= 1:
        fn(0, size)
        return
    run_pieces(fn, bounds(size, count))


def run_pieces(fn, pieces) -> None:
    """``fn(*piece)`` for every piece (a list of argument tuples), on this thread and up to
    ``num_threads() - 1`` pool threads when the pool is free (else one after the other, in this
    thread); re-raises the first failing piece's exception after all have finished.  A signal
    handler's exception (Ctrl-C) is raised once no worker runs a piece any more (``_run_batch``).
    Pieces are handed out one at a time, so a thread that gets no core (a busy machine, BLAS
    threads still spinning after a matmul) leaves its share to the others instead of holding the
    caller up."""
    helpers = min(num_threads(), len(pieces)) - 1
    error = _SERIAL
    if helpers >= 1:
        token = _Token()
        ref = weakref.ref(token)
        try:   # taking the pool inside the try, freeing it in the finally without a call (no check point)
            if _take_pool(ref):
                error = _run_batch(_Batch(fn, pieces), helpers)
        finally:
            if _holder[0] is ref:
                _holder[0] = _FREE
    if error is _SERIAL:
        for piece in pieces:
            fn(*piece)
    elif error is not None:
        try:
            raise error
        finally:
            error = None   # (the traceback holds this frame: no cycle keeping the call's arrays alive)


_SERIAL = object()   # run_pieces: the pool was not taken


def _take_pool(ref) -> bool:
    """Take the pool for the call whose token ``ref`` refers to, if no live call holds it.  The
    pool belongs to a token, not to a lock: a call that ends without freeing it (a second Ctrl-C
    in its ``finally``) drops its token with its frame, and the pool is free again once nothing
    holds that frame (a kept traceback does, until it is dropped).  (``_guard`` is held for the
    test and the store only, released by its ``with`` whatever is raised.)"""
    with _guard:
        if _holder[0]() is not None:
            return False
        _holder[0] = ref
        return True


def _free_pool(ref) -> None:
    """Free the pool if the call whose token ``ref`` refers to holds it (tests)."""
    if _holder[0] is ref:
        _holder[0] = _FREE


def _run_batch(batch, helpers):
    """Queue ``batch`` for ``helpers`` workers, run pieces in this thread too, wait for the last
    one; return the exception to raise (a signal handler's, else the first failing piece's) or
    None.  A signal handler's exception (Ctrl-C, raised in this, the main, thread between two
    Python instructions) inside a piece is that piece's error; anywhere else it may have cost a
    piece this thread had taken, so the call does not wait for all pieces: it cancels the rest
    (``cancelled``, then ``_wait_out``) and raises once no worker is inside one, so none writes the outputs after the
    call has ended, and none is left waiting."""
    try:
        _pool.ensure(helpers)
        for _ in range(helpers):
            _pool.jobs.put(batch)
        batch.run()
        interrupted = _wait(batch)   # every piece is taken: the workers finish theirs
    except BaseException as exc:   # noqa: BLE001 - raised by the caller once no piece runs any more
        batch.cancelled = True     # (first: no check point before this store, so a second Ctrl-C cannot skip it)
        interrupted = exc
    if interrupted is not None:
        batch.cancelled = True
        _wait_out(batch)
        batch.close()
        try:
            return interrupted
        finally:
            interrupted = None   # (the exception's traceback holds this frame: no cycle)
    return batch.close()


def _wait_out(batch):
    """Wait until no worker is inside the cancelled ``batch`` (through further Ctrl-Cs: the call
    raises the first).  A further one at the loop's own check points could still end this early."""
    while True:
        try:
            while batch.active:
                time.sleep(0.0002)
            return
        except BaseException:   # noqa: BLE001, S110 - the call raises the first interrupt after this
            pass


def _wait(batch):
    """Wait for ``batch.complete`` on ``batch.done`` (the lock the last piece releases), through a
    signal handler's exception (Ctrl-C) too, which it returns (the last one, or None): the workers
    write the outputs until their pieces finish, so the caller raises it only then.  (The flag,
    not the lock, says when: an interrupt right after a successful ``acquire`` must not send this
    thread back to acquire the lock it holds.)"""
    interrupted = None
    while not batch.complete:
        try:
            batch.done.acquire()
        except BaseException as exc:   # noqa: BLE001 - returned, raised by the caller
            interrupted = exc
    try:
        return interrupted
    finally:
        interrupted = None   # (the exception's traceback holds this frame: no cycle)


def chunked(fn, outs, *ins, keep: int = 0, min_elements: int | None = None):
    """``fn(*ins, *outs)`` computed piece by piece on up to ``num_threads()`` threads; returns ``outs``.

    ``outs``: an array or a tuple of arrays, written by ``fn``; the first one's shape is the
    reference.  Every operand (input or output) has the reference's rank or less (aligned on the
    right, as in broadcasting), and along each split axis either the reference's size or 1.
    ``keep``: trailing axes never split (the axes ``fn`` reduces over).  ``fn`` must compute each
    output element from the corresponding input elements only (along the split axes).
    ``min_elements``: the smallest piece worth a thread (default ``MIN_ELEMENTS``).
    """
    out_list = outs if isinstance(outs, tuple) else (outs,)
    ref = out_list[0]
    count = _piece_count(ref.size, num_threads(), MIN_ELEMENTS if min_elements is None else min_elements)
    if count > 1:
        pieces = _split(ins + out_list, ref.shape, keep, count)
        if pieces is not None:
            run_pieces(fn, pieces)
            return outs
    fn(*ins, *out_list)
    return outs


def _piece_count(size, threads, min_elements):
    if threads < 2:
        return 1
    return min(threads * PIECES_PER_THREAD, size // max(min_elements, 1))


def _split(operands, shape, keep, count):
    """Argument tuples of ``count`` pieces (or fewer), or None when nothing can be split."""
    if keep == 0 and all(a.shape == shape and a.flags.c_contiguous for a in operands):
        flat = [a.reshape(-1) for a in operands]
        step = -(-flat[0].size // count // _ALIGN) * _ALIGN
        bounds = range(0, flat[0].size, step)
        return [tuple(a[start:start + step] for a in flat) for start in bounds]
    lead = _mergeable_lead(operands, shape, len(shape) - keep)
    if lead == 0:
        return None
    rows = int(np.prod(shape[:lead]))
    views = [_rows_view(a, shape, lead, rows) for a in operands]
    step = -(-rows // min(count, rows))
    return [tuple(v if v.shape[0] == 1 < rows else v[start:start + step] for v in views)
            for start in range(0, rows, step)]


def _mergeable_lead(operands, shape, limit):
    """The most leading axes (at most ``limit``) that every operand either has in full and can
    merge into one axis without a copy, or broadcasts (size 1 in all of them)."""
    best = 0
    for lead in range(1, max(limit, 0) + 1):
        if not all(_fits(a, shape, lead) for a in operands):
            break
        best = lead
    return best


def _fits(a, shape, lead):
    offset = len(shape) - a.ndim
    dims = [1] * max(offset, 0) + list(a.shape[:max(lead - offset, 0)])
    if all(d == 1 for d in dims):
        return True
    if dims != list(shape[:lead]) or offset > 0:
        return False
    return all(a.strides[i] == a.strides[i + 1] * a.shape[i + 1] for i in range(lead - 1) if a.shape[i + 1] != 1)


def _rows_view(a, shape, lead, rows):
    """``a`` as (rows or 1, <the remaining axes aligned to ``shape``>), without a copy."""
    offset = len(shape) - a.ndim
    full = [1] * offset + list(a.shape)
    merged = rows if any(d != 1 for d in full[:lead]) else 1
    return a.reshape([merged] + full[lead:])
