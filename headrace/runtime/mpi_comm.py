"""``MPICommunicator``: the ``ops.collective.Communicator`` interface over the ranks of an MPI job.

One communicator per process (``communicator()``), rank = the MPI rank.  Every method works on
NumPy buffers, never on pickled objects, and returns fresh arrays (the interface's contract);
``all_reduce_sum_many`` takes a bucket of arrays and runs one collective for all of them.

Two transports, chosen once per job:
- every rank on this host (the usual case; ``HEADRACE_MPI_SHM=0`` turns it off): MPI-3
  shared-memory windows (``mpi_shm``): each rank reads its peers' memory directly.
- otherwise: MPI's non-blocking buffer collectives (``Iallreduce``, ``Ibcast``, ``Iallgather``,
  ``Ibarrier``), waited for by polling so that a wait longer than the timeout raises
  ``CollectiveTimeoutError`` instead of hanging.
Sums: on shared memory the ranks' arrays are added in rank order, so every rank gets the same bits
as the thread backend; over MPI the library picks the order (every rank still gets the same
result).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..ops.collective import Communicator
from .mpi_world import CollectiveTimeoutError, join


def _flat_bytes(arrays) -> int:
    return sum(a.nbytes for a in arrays)


class MPICommunicator(Communicator):
    def __init__(self, world):
        self.world = world
        self.rank = world.rank
        self.world_size = world.size
        self.arena = None
        if world.control is not None:
            from .mpi_shm import Arena

            self.arena = Arena(world, world.control)
        self._count = 0
        self._pinned = []   # Arenas of buffer(): one shared window each
        self._outputs = _OutputPool()

    @property
    def transport(self) -> str:
        return "shared memory" if self.arena is not None else "MPI"

    def _what(self, name: str, nbytes: int) -> str:
        self._count += 1
        return f"collective #{self._count} ({name} of {nbytes} bytes)"

    # --- the interface --------------------------------------------------------------------------
    def all_reduce_sum(self, array):
        return self.all_reduce_sum_many([array])[0]

    def all_reduce_sum_many(self, arrays):
        """The elementwise sums of each array over the ranks, in one collective (a fused bucket).
        Every array of one call has the same dtype."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if not arrays:
            return []
        dtype = arrays[0].dtype
        for a in arrays[1:]:
            if a.dtype != dtype:
                raise TypeError(f"all_reduce_sum_many: one dtype per bucket, got {dtype} and {a.dtype}")
        nbytes = _flat_bytes(arrays)
        what = self._what("all_reduce_sum", nbytes)
        if self.arena is not None:
            self.arena.reserve(nbytes)
            flat = self.arena.view(self.rank, nbytes, dtype)
            _pack(arrays, flat)
            self.arena.sum_in_place(nbytes, dtype, what)
        else:
            flat = np.empty(nbytes // dtype.itemsize, dtype)
            _pack(arrays, flat)
            self._wait(self.world.comm.Iallreduce(self.world.mpi.IN_PLACE, flat, op=self.world.mpi.SUM), what)
        return _unpack(flat, arrays, self._outputs)

    def start_all_reduce_sum_many(self, arrays):
        """Begin ``all_reduce_sum_many``; ``handle.wait()`` gives the sums.  Over MPI the
        collective then proceeds while the caller computes (``handle.test()`` lets it progress);
        on shared memory it completes at once."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if self.arena is not None or not arrays:
            return _Done(self.all_reduce_sum_many(arrays))
        flat = np.empty(_flat_bytes(arrays) // arrays[0].dtype.itemsize, arrays[0].dtype)
        _pack(arrays, flat)
        what = self._what("all_reduce_sum", flat.nbytes)
        request = self.world.comm.Iallreduce(self.world.mpi.IN_PLACE, flat, op=self.world.mpi.SUM)
        return _Pending(self, request, flat, arrays, what)

    def all_reduce_sum_(self, buffer: np.ndarray) -> np.ndarray:
        """Sum ``buffer`` over the ranks in place; with no copy at all when ``buffer`` came from
        ``self.buffer(...)`` (it then lives in this rank's slot of its own shared window)."""
        what = self._what("all_reduce_sum_", buffer.nbytes)
        if self.arena is None:
            self._wait(self.world.comm.Iallreduce(self.world.mpi.IN_PLACE, buffer, op=self.world.mpi.SUM), what)
            return buffer
        arena = self._pinned_arena(buffer)
        if arena is not None:
            arena.sum_in_place(buffer.nbytes, buffer.dtype, what)
            return buffer
        self.arena.reserve(buffer.nbytes)
        slot = self.arena.view(self.rank, buffer.nbytes, buffer.dtype)
        slot[...] = buffer.reshape(-1)
        self.arena.sum_in_place(buffer.nbytes, buffer.dtype, what)
        buffer.reshape(-1)[...] = slot
        return buffer

    def _pinned_arena(self, buffer):
        address = buffer.__array_interface__["data"][0]
        for arena in self._pinned:
            if arena.slots[self.rank].__array_interface__["data"][0] == address and buffer.flags.c_contiguous \
                    and buffer.nbytes <= arena.capacity:
                return arena
        return None

    def buffer(self, shape, dtype=np.float32) -> np.ndarray:
        """A new array in a shared window of its own (collective: every rank asks for the same
        size); ``all_reduce_sum_`` on it reads the peers' copies directly, with no copy in or out."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if self.arena is None:
            return np.empty(shape, dtype)
        from .mpi_shm import Arena

        arena = Arena(self.world, self.world.control)
        arena.reserve(count * dtype.itemsize)
        self._pinned.append(arena)
        return arena.view(self.rank, count * dtype.itemsize, dtype).reshape(shape)

    def reduce_sum(self, array, root):
        total = self.all_reduce_sum(array)
        return total if self.rank == root else array

    def broadcast(self, arrays, roots):
        arrays = [np.ascontiguousarray(a) for a in arrays]
        return [self._broadcast_one(array, root) for array, root in zip(arrays, roots)]

    def _broadcast_one(self, array, root):
        """Every rank takes part; the root keeps its own array, the others get a copy."""
        mine = root == self.rank
        result = array if mine else np.empty_like(array)
        what = self._what(f"broadcast from rank {root}", array.nbytes)
        if self.arena is None:
            self._wait(self.world.comm.Ibcast(result if not mine else array.copy(), root=root), what)
            return result
        self._deposit_and_sync([array], what)
        if not mine:
            result[...] = self.arena.view(root, array.nbytes, array.dtype).reshape(array.shape)
        self.world.control.sync(what)
        return result

    def barrier(self) -> None:
        what = self._what("barrier", 0)
        if self.arena is not None:
            self.world.control.sync(what)
        else:
            self._wait(self.world.comm.Ibarrier(), what)

    def all_gather(self, array) -> list:
        """Every rank's ``array`` (same shape and dtype on every rank), in rank order."""
        array = np.ascontiguousarray(array)
        what = self._what("all_gather", array.nbytes)
        if self.arena is None:
            out = np.empty((self.world_size,) + array.shape, array.dtype)
            self._wait(self.world.comm.Iallgather(array, out), what)
            return list(out)
        self._deposit_and_sync([array], what)
        out = [self.arena.view(r, array.nbytes, array.dtype).reshape(array.shape).copy()
               for r in range(self.world_size)]
        self.world.control.sync(what)
        return out

    # --- helpers ---------------------------------------------------------------------------------
    def _deposit_and_sync(self, arrays, what) -> None:
        nbytes = _flat_bytes(arrays)
        dtype = arrays[0].dtype
        self.arena.reserve(nbytes)
        _pack(arrays, self.arena.view(self.rank, nbytes, dtype))
        control = self.world.control
        control.announce(nbytes, dtype)
        control.sync(what)
        control.check_same(what)

    def _wait(self, request, what) -> None:
        """Poll a non-blocking MPI request; past the timeout, raise instead of waiting forever."""
        start = time.monotonic()
        delay = 0.0
        while not request.Test():
            if time.monotonic() - start > self.world.timeout:
                raise CollectiveTimeoutError(
                    f"headrace.distributed: rank {self.rank} waited more than {self.world.timeout:g} s "
                    f"in {what}: some rank did not reach it (HEADRACE_DIST_TIMEOUT sets the limit)")
            time.sleep(delay)
            delay = min(delay * 2 + 1e-5, 0.002)


class _Done:
    def __init__(self, results):
        self.results = results

    def test(self) -> bool:
        return True

    def wait(self) -> list:
        return self.results


class _Pending:
    def __init__(self, comm, request, flat, like, what):
        self.comm, self.request, self.flat, self.like, self.what = comm, request, flat, like, what

    def test(self) -> bool:
        return self.request.Test()

    def wait(self) -> list:
        self.comm._wait(self.request, self.what)
        return _unpack(self.flat, self.like, self.comm._outputs)


def _pack(arrays, flat) -> None:
    offset = 0
    for a in arrays:
        flat[offset:offset + a.size] = a.reshape(-1)
        offset += a.size


class _OutputPool:
    """Result arrays, reused once nobody but the pool holds them.

    Every collective returns new arrays; allocating them fresh each step costs more than the sum
    itself (the allocator returns freed multi-MiB blocks to the system, so each step faults in new
    pages).  An array is handed out again only when the pool's own references are its only ones
    (``sys.getrefcount``: no caller, view or scope still sees it), so a result is never shared."""

    _PER_KEY = 64   # at most what was in use at once (a new array joins only when all are taken)

    def __init__(self):
        self.arrays = {}   # (shape, dtype) -> [arrays]
        self.free_count = self._count_of_unshared()

    @staticmethod
    def _count_of_unshared() -> int:
        """What ``sys.getrefcount`` says, in ``take``'s loop, of an array only its list holds
        (interpreters differ in which borrowed references they count)."""
        kept = [np.empty(1)]
        for array in kept:
            return sys.getrefcount(array)

    def take(self, shape, dtype) -> np.ndarray:
        kept = self.arrays.setdefault((tuple(shape), np.dtype(dtype).str), [])
        for array in kept:
            if sys.getrefcount(array) <= self.free_count:
                return array
        array = np.empty(shape, dtype)
        if len(kept) < self._PER_KEY:
            kept.append(array)
        return array


def _unpack(flat, like, pool=None) -> list:
    out, offset = [], 0
    for a in like:
        piece = flat[offset:offset + a.size].reshape(a.shape)
        if pool is None:
            out.append(piece.copy())
        else:
            target = pool.take(a.shape, a.dtype)
            np.copyto(target, piece)
            out.append(target)
        offset += a.size
    return out


def communicator(timeout=None):
    """This process's communicator (joining the group first), or None for a world of one."""
    world = join(timeout)
    if world is None:
        return None
    if world.communicator is None:
        world.communicator = MPICommunicator(world)
    return world.communicator
