"""Collective backends: the ``ops.collective.Communicator`` interface, for places in one process.

``ThreadGroup(n)`` makes ``n`` communicators (``group.communicator(rank)``), one per place thread.
A collective is two barrier rounds: every rank deposits its array; then rank ``r`` sums chunk
``r`` of the flattened arrays (in rank order, so every rank sees the same bits) and writes it into
every rank's fresh output; after the second barrier each rank owns its result.  Work is split
across ranks, so the threads add the chunks in parallel (NumPy releases the GIL).

When one place fails, the runner calls ``group.abort()``: ranks waiting in a barrier get
``threading.BrokenBarrierError`` instead of waiting forever.  A process backend (mpi4py) will
implement the same methods over ranks in separate processes (``runtime/mpi_comm.py``).
"""
from __future__ import annotations

import threading

import numpy as np

from ..ops.collective import Communicator


class ThreadGroup:
    def __init__(self, world_size: int):
        if world_size < 1:
            raise ValueError(f"a group needs at least one rank, got {world_size}")
        self.world_size = world_size
        self._barrier = threading.Barrier(world_size)
        self._inputs = [None] * world_size
        self._outputs = [None] * world_size

    def communicator(self, rank: int) -> "ThreadCommunicator":
        return ThreadCommunicator(self, rank)

    def abort(self) -> None:
        self._barrier.abort()

    def reset(self) -> None:
        self._barrier = threading.Barrier(self.world_size)

    def wait(self) -> None:
        self._barrier.wait()

    def _sum_into(self, rank: int, roots) -> None:
        """Rank ``rank`` sums its chunk of the deposited arrays into the outputs of ``roots``."""
        inputs = [a.reshape(-1) for a in self._inputs]
        size = inputs[0].size
        step = -(-size // self.world_size)
        lo, hi = rank * step, min(size, (rank + 1) * step)
        if lo >= hi:
            return
        chunk = inputs[0][lo:hi].copy()
        for other in inputs[1:]:
            chunk += other[lo:hi]
        for root in roots:
            self._outputs[root].reshape(-1)[lo:hi] = chunk


class ThreadCommunicator(Communicator):
    def __init__(self, group: ThreadGroup, rank: int):
        self.group = group
        self.rank = rank
        self.world_size = group.world_size

    def _check_same(self, array) -> None:
        first = self.group._inputs[0]
        if array.shape != first.shape or array.dtype != first.dtype:
            raise ValueError(f"collective on place {self.rank}: shape {array.shape} dtype {array.dtype} "
                             f"differs from place 0's shape {first.shape} dtype {first.dtype}")

    def _reduce(self, array, roots) -> None:
        group = self.group
        group._inputs[self.rank] = np.ascontiguousarray(array)
        if self.rank in roots:
            group._outputs[self.rank] = np.empty(array.shape, array.dtype)
        group.wait()
        self._check_same(array)
        group._sum_into(self.rank, roots)
        group.wait()

    def all_reduce_sum(self, array):
        if self.world_size == 1:
            return array
        self._reduce(array, range(self.world_size))
        return self.group._outputs[self.rank]

    def reduce_sum(self, array, root):
        if self.world_size == 1:
            return array
        self._reduce(array, (root,))
        return self.group._outputs[root] if self.rank == root else array

    def broadcast(self, arrays, roots):
        if self.world_size == 1:
            return list(arrays)
        group = self.group
        group._inputs[self.rank] = list(arrays)
        group.wait()
        result = [a if root == self.rank else np.array(group._inputs[root][i], copy=True)
                  for i, (a, root) in enumerate(zip(arrays, roots))]
        group.wait()
        return result

    def all_reduce_sum_many(self, arrays):
        """One collective for the bucket: the arrays are packed into one flat buffer."""
        if self.world_size == 1 or not arrays:
            return list(arrays)
        flat = np.concatenate([np.ascontiguousarray(a).reshape(-1) for a in arrays])
        total = self.all_reduce_sum(flat)
        out, offset = [], 0
        for a in arrays:
            out.append(total[offset:offset + a.size].reshape(a.shape).copy())  # each owns its bytes
            offset += a.size
        return out

    def barrier(self):
        if self.world_size > 1:
            self.group.wait()

    def all_gather(self, array):
        if self.world_size == 1:
            return [array]
        group = self.group
        group._inputs[self.rank] = np.ascontiguousarray(array)
        group.wait()
        self._check_same(array)
        result = [np.array(a, copy=True) for a in group._inputs]
        group.wait()
        return result
