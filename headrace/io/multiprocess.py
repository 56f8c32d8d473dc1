"""The DataLoader iterator with worker processes (``num_workers > 0``).

Processes are started with ``fork`` where the platform has it (Linux): starting is cheap, and
the dataset, collate function and ``worker_init_fn`` reach the workers without being pickled
(lambdas and classes defined in a test or a ``__main__`` script work), as with the reference on
Linux. Elsewhere ``spawn`` is used and they must pickle. See docs/architecture.md.

Each worker has its own index pipe (tasks are sent synchronously: no feeder thread that a garbage
collection could stop before the shutdown message goes out) and its own result queue. Batch ``k`` of an epoch goes to a
worker round robin and is read back from that worker's result queue; a worker answers its tasks
in order, so batches come out in sampler order without a reordering buffer. Up to
``prefetch_factor * num_workers`` batches are in flight. While it waits the main process checks,
every ``POLL_SECONDS``, that every worker is alive (a worker killed by a signal is an error
naming the worker and the signal) and, with ``timeout > 0``, how long it has waited.

Shutdown (end of the epoch unless ``persistent_workers``, an error, Ctrl-C in the loop, the
iterator dropped or garbage-collected, interpreter exit): ``None`` to every index pipe, join
each worker, terminate (then kill) one that does not stop or whose pipe is already closed, and
close the pipes and queues, so no worker process or zombie is left.
"""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import pickle
import queue
import signal
import time
import weakref

import numpy as np

from ..core import context
from ..core.errors import HeadraceError
from .worker import POLL_SECONDS, Exhausted, WorkerFailure, worker_loop

JOIN_SECONDS = 1.0
_LIVE = weakref.WeakSet()


class DataLoaderWorkerError(HeadraceError, RuntimeError):
    """A DataLoader worker failed: it raised (an exception that cannot be rebuilt in its own type),
    died, was killed by a signal, or did not answer within ``timeout``."""


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


@contextlib.contextmanager
def _sigint_blocked():
    """Block SIGINT in this thread while a worker is started: the child inherits the mask, so a
    Ctrl-C between its start and its ``SIG_IGN`` stays pending (and is then ignored) instead of
    raising ``KeyboardInterrupt`` in the half-started worker.  The parent gets a pending SIGINT
    as soon as the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class MultiProcessIter:
    """Batches computed by worker processes (see the module docstring)."""

    def __init__(self, loader):
        self.closed = True       # until the workers exist (``__del__`` may run on a half-built one)
        self._owner_pid = os.getpid()
        self._loader = loader
        self._per_step = 1 if context.in_dynamic_mode() else len(loader.places)
        ctx = _context()
        n = loader.num_workers
        self._base_seed = int(np.random.randint(0, 2**62))
        self._index_pipes = []
        self._result_queues = [ctx.Queue() for _ in range(n)]
        self._workers = []
        self.closed = False
        _LIVE.add(self)
        try:
            for w in range(n):
                # each task pipe is made just before its worker starts and its read end closed here
                # right after: only worker w holds it, so if w dies a send to it fails (EPIPE)
                # instead of blocking for ever on a full pipe that nobody reads
                receive, send = ctx.Pipe(duplex=False)
                self._index_pipes.append(send)
                proc = ctx.Process(target=worker_loop, name=f"DataLoader worker {w}", daemon=True,
                                   args=(loader, w, self._base_seed, receive, self._result_queues[w]))
                try:
                    with _sigint_blocked():     # a Ctrl-C cannot hit the child before it ignores SIGINT
                        proc.start()
                finally:
                    receive.close()
                self._workers.append(proc)
        except BaseException:
            self.shutdown()
            raise
        self._epoch = 0
        self._start_epoch()

    # --- epochs ----------------------------------------------------------------------------------
    def _start_epoch(self):
        self._sampler = iter(self._loader._index_sampler())
        self._sampler_done = False
        self._sent = self._received = 0
        self._owner = {}
        self._active = [True] * len(self._workers)
        self._next_worker = 0
        for _ in range(self._loader.prefetch_factor * len(self._workers)):
            self._send_task()

    def reset(self):
        """A new epoch on the same workers (``persistent_workers``); unread batches are dropped."""
        self._epoch += 1
        self._start_epoch()

    def _send_task(self):
        if self._sampler_done or not any(self._active):
            return
        n = len(self._workers)
        while not self._active[self._next_worker % n]:
            self._next_worker += 1
        w = self._next_worker % n
        self._next_worker += 1
        try:
            indices = next(self._sampler)
        except StopIteration:
            self._sampler_done = True
            return
        try:
            self._index_pipes[w].send((self._epoch, self._sent, indices))
        except (BrokenPipeError, ConnectionResetError):
            self._workers[w].join(timeout=5)      # the worker is gone: report how it ended
            self._check_workers()
            raise DataLoaderWorkerError(
                f"DataLoader worker {w} (pid {self._workers[w].pid}) closed its task pipe") from None
        self._owner[self._sent] = w
        self._sent += 1

    # --- iteration -------------------------------------------------------------------------------
    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        if self.closed:
            raise StopIteration
        try:
            batches = [self._next_batch() for _ in range(self._per_step)]
        except StopIteration:
            if not self._loader.persistent_workers:
                self.shutdown()
            raise
        except BaseException:
            self.shutdown()
            raise
        return self._loader._deliver(batches)

    def _next_batch(self):
        while self._received < self._sent:
            w = self._owner.pop(self._received)
            reply = self._receive(w)
            self._received += 1
            if isinstance(reply, Exhausted):
                self._active[w] = False
            self._send_task()
            if isinstance(reply, Exhausted):
                continue
            if isinstance(reply, WorkerFailure):
                raise _rebuild(reply, self._workers[w].pid)
            return pickle.loads(reply)
        raise StopIteration

    def _receive(self, w):
        timeout = self._loader.timeout
        start = time.monotonic()
        while True:
            try:
                epoch, _, payload = self._result_queues[w].get(
                    timeout=min(POLL_SECONDS, timeout) if timeout else POLL_SECONDS)
            except queue.Empty:
                self._check_workers()
                if timeout and time.monotonic() - start >= timeout:
                    raise DataLoaderWorkerError(
                        f"DataLoader: timed out after {timeout} s waiting for batch {self._received} "
                        f"from worker {w} (pid {self._workers[w].pid})") from None
                continue
            if epoch == self._epoch:     # replies of an abandoned epoch are skipped
                return payload

    def _check_workers(self):
        for w, proc in enumerate(self._workers):
            code = proc.exitcode
            if code is None:
                continue
            if code < 0:
                raise DataLoaderWorkerError(
                    f"DataLoader worker {w} (pid {proc.pid}) was killed by signal {_signal_name(-code)}")
            raise DataLoaderWorkerError(
                f"DataLoader worker {w} (pid {proc.pid}) exited unexpectedly with exit code {code}")

    # --- shutdown --------------------------------------------------------------------------------
    def shutdown(self):
        """Stop and reap every worker and close the queues (idempotent)."""
        if self.closed or os.getpid() != self._owner_pid:   # a forked worker's copy owns nothing
            return
        self.closed = True
        _LIVE.discard(self)
        told = []
        for pipe in self._index_pipes:
            try:
                pipe.send(None)
                told.append(True)
            except Exception:   # already closed (a garbage collection got to it first), or broken
                told.append(False)
        deadline = time.monotonic() + JOIN_SECONDS
        for proc, ok in zip(self._workers, told):
            if ok:
                proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self._workers:
            if proc.is_alive():
                proc.terminate()
                proc.join(JOIN_SECONDS)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for pipe in self._index_pipes:
            pipe.close()
        for q in self._result_queues:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        self.shutdown()


def _rebuild(failure: WorkerFailure, pid) -> BaseException:
    """The worker's exception in its own type when that type takes a message, else a
    ``DataLoaderWorkerError``; either way the message carries the worker's traceback."""
    message = failure.message(pid)
    kind = failure.exc_type
    # StopIteration would end the caller's loop silently: it becomes a DataLoaderWorkerError
    if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(kind, StopIteration):
        try:
            exc = kind(message)
        except Exception:
            exc = None
        if exc is not None and str(exc) == message:
            return exc
        if exc is not None and exc.args == (message,):
            # KeyError quotes its message on one line: keep the type, print the message as is
            shown = type(kind.__name__, (kind,), {"__str__": BaseException.__str__,
                                                  "__module__": kind.__module__})
            return shown(message)
    return DataLoaderWorkerError(message)


@atexit.register
def _shutdown_all():
    for it in list(_LIVE):
        it.shutdown()
