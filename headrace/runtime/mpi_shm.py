"""Same-host collectives through MPI-3 shared-memory windows (``MPI.Win.Allocate_shared``).

When every rank of the job shares one host, each rank maps every other rank's memory:

``Control``: a small int64 table in one window, a row per field and a column per rank:
``seq`` (how many synchronisation points the rank has reached), ``failed`` (1 once the rank
failed), ``pid``, and ``nbytes`` / ``dtype`` (what the rank brings to the current collective, so a
mismatch is an error naming both ranks, not garbage).  ``sync()`` is a barrier on ``seq``: a rank
spins (yielding the CPU, then sleeping a little longer each round) until every ``seq`` reached its
own; while waiting it checks the ``failed`` row, whether the peers' processes are still alive,
and the timeout, so it never waits forever and names the rank it waited for.

``Arena``: one data slot per rank in another window.  An all-reduce of ``n`` bytes is
    deposit (each rank copies its input into its slot; nothing to copy when the input already
    lives in the slot: ``Arena.buffer``) -> sync -> rank ``r`` adds chunk ``r`` of every slot,
    in rank order (so every rank gets the same bits, the same order as the thread backend), block
    by block through a small private buffer that stays in cache, and writes the sum into chunk
    ``r`` of every slot -> sync.
Every rank then holds the sum in its own slot.  Each rank reads ``n`` and writes ``n`` bytes, the
ranks in parallel: the bound is the host's memory bandwidth, not a message-passing protocol.
Slots grow (collectively: every rank asks for the same size at the same collective) when a
collective needs more room; old windows stay mapped while arrays view them.

Memory ordering: a rank publishes with a store to its ``seq`` entry after writing data, and the
readers read data after seeing it; ``Win_sync`` (a full memory barrier) is called on both sides.
"""
from __future__ import annotations

import os
import time

import numpy as np

from .mpi_world import CollectiveTimeoutError, PeerFailedError

_SEQ, _FAILED, _PID, _NBYTES, _DTYPE = range(5)
_BLOCK = 1 << 18  # bytes added per step of the reduction (fits in L2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class Control:
    def __init__(self, world, node, win, table):
        self.world = world
        self.node = node
        self.win = win
        self.table = table
        self.rank = world.rank
        self.count = 0

    @classmethod
    def create(cls, world):
        """The control block, or None when the ranks do not all share this host."""
        mpi, comm = world.mpi, world.comm
        if os.environ.get("HEADRACE_MPI_SHM", "1") == "0":
            return None
        node = comm.Split_type(mpi.COMM_TYPE_SHARED, key=world.rank)
        if node.Get_size() != world.size:
            node.Free()
            return None
        nbytes = 5 * world.size * 8
        win = mpi.Win.Allocate_shared(nbytes if world.rank == 0 else 0, 8, comm=node)
        buf, _ = win.Shared_query(0)
        table = np.ndarray((5, world.size), dtype=np.int64, buffer=buf)
        if world.rank == 0:
            table[:] = 0
        win.Lock_all()
        node.Barrier()
        table[_PID, world.rank] = os.getpid()
        win.Sync()
        node.Barrier()
        return cls(world, node, win, table)

    def mark_failed(self, rank: int) -> None:
        self.table[_FAILED, rank] = 1
        self.win.Sync()

    def announce(self, nbytes: int, dtype) -> None:
        self.table[_NBYTES, self.rank] = nbytes
        self.table[_DTYPE, self.rank] = np.dtype(dtype).num

    def check_same(self, what: str) -> None:
        sizes, kinds = self.table[_NBYTES], self.table[_DTYPE]
        for other in range(self.world.size):
            if sizes[other] != sizes[self.rank] or kinds[other] != kinds[self.rank]:
                raise ValueError(
                    f"{what}: rank {self.rank} brings {sizes[self.rank]} bytes of "
                    f"{_dtype_name(kinds[self.rank])}, "
                    f"rank {other} brings {sizes[other]} bytes of {_dtype_name(kinds[other])}; every rank "
                    "must call the same collective with the same shape and dtype")

    def sync(self, what: str) -> None:
        """Barrier over the ranks (see the module docstring); ``what`` names the collective."""
        self.win.Sync()
        self.count += 1
        target = self.count
        seq = self.table[_SEQ]
        seq[self.rank] = target
        self.win.Sync()
        if seq.min() >= target:
            return
        self._wait(seq, target, what)
        self.win.Sync()

    def _wait(self, seq, target, what) -> None:
        start = time.monotonic()
        next_check = start + 0.2
        spins = 0
        while seq.min() < target:
            spins += 1
            if spins < 200:
                os.sched_yield()
                continue
            time.sleep(min(0.0002 * (spins - 199), 0.002))
            now = time.monotonic()
            if now >= next_check:
                next_check = now + 0.2
                self._check_peers(seq, target, what, now - start)

    def _check_peers(self, seq, target, what, waited) -> None:
        size = self.world.size
        behind = [r for r in range(size) if seq[r] < target]
        failed = [r for r in range(size) if self.table[_FAILED, r]]
        if failed:
            raise PeerFailedError(f"headrace.distributed: rank {failed[0]} of {size} failed while rank "
                                  f"{self.rank} waited for it in {what}")
        dead = [r for r in behind if not _alive(int(self.table[_PID, r]))]
        if dead:
            raise PeerFailedError(f"headrace.distributed: rank {dead[0]} of {size} (pid "
                                  f"{int(self.table[_PID, dead[0]])}) exited or was killed while rank "
                                  f"{self.rank} waited for it in {what}")
        if waited > self.world.timeout:
            raise CollectiveTimeoutError(
                f"headrace.distributed: rank(s) {behind} of {size} did not reach {what} within "
                f"{self.world.timeout:g} s (rank {self.rank} waited; HEADRACE_DIST_TIMEOUT sets the limit)")


def _dtype_name(num) -> str:
    for kind in (np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_,
                 np.int16, np.uint16, np.uint32, np.uint64, np.complex64, np.complex128):
        if np.dtype(kind).num == int(num):
            return np.dtype(kind).name
    return f"dtype #{int(num)}"


class Arena:
    """Per-rank data slots in a shared window (see the module docstring)."""

    def __init__(self, world, control: Control):
        self.world = world
        self.control = control
        self.capacity = 0
        self.windows = []
        self.slots = []
        self._scratch = np.empty(_BLOCK, dtype=np.uint8)

    def reserve(self, nbytes: int) -> None:
        """Make every slot hold ``nbytes`` (collective: every rank asks for the same size)."""
        if nbytes <= self.capacity:
            return
        capacity = max(nbytes, 2 * self.capacity, 1 << 20)
        capacity = -(-capacity // 4096) * 4096
        mpi = self.world.mpi
        win = mpi.Win.Allocate_shared(capacity, 1, comm=self.control.node)
        slots = []
        for r in range(self.world.size):
            buf, _ = win.Shared_query(r)
            slots.append(np.ndarray((capacity,), dtype=np.uint8, buffer=buf))
        self.windows.append(win)
        self.slots, self.capacity = slots, capacity

    def view(self, rank: int, nbytes: int, dtype) -> np.ndarray:
        return self.slots[rank][:nbytes].view(dtype)

    def sum_in_place(self, nbytes: int, dtype, what: str) -> None:
        """Every slot's first ``nbytes`` (already deposited, not yet synced) becomes their sum."""
        control, size = self.control, self.world.size
        control.announce(nbytes, dtype)
        control.sync(what)
        control.check_same(what)
        itemsize = np.dtype(dtype).itemsize
        count = nbytes // itemsize
        step = -(-count // size)
        lo, hi = self.world.rank * step, min(count, (self.world.rank + 1) * step)
        views = [self.view(r, nbytes, dtype) for r in range(size)]
        block = max(_BLOCK // itemsize, 1)
        scratch = self._scratch.view(dtype)[:block]
        for start in range(lo, hi, block):
            end = min(start + block, hi)
            acc = scratch[:end - start]
            np.add(views[0][start:end], views[1][start:end], out=acc)
            for other in views[2:]:
                np.add(acc, other[start:end], out=acc)
            for v in views:
                v[start:end] = acc
        control.sync(what)
