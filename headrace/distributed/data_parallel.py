"""``paddle.DataParallel(layer)``: eager data parallel over the ranks of the group.

Construction broadcasts rank 0's parameters and buffers to every rank (all start identical).
The trainable parameters are grouped into buckets in reverse registration order (the order the
backward produces their gradients): the first bucket holds at most ``last_comm_buffer_size`` MB,
the others ``comm_buffer_size`` MB, as the reference.  During ``loss.backward()`` the tape tells
the layer when a parameter's gradient is final (``eager.tape.grad_listeners``); as soon as every
gradient of a bucket is (and every earlier bucket has gone), the bucket is all-reduced in one
collective and divided by the number of ranks: with each rank's loss the mean over its slice of
an evenly split batch, every rank then holds the gradient of the mean over the whole batch.
Buckets go in the same order on every rank.  A parameter with no gradient in this backward takes
part with zeros (its gradient is then the others' contribution).  Parameters reached only inside
a recompute block (whose backward runs nested in the outer one) count as ready when the outer
backward ends.

``no_sync()``: inside it, backward only accumulates local gradients; the next backward outside
it all-reduces the accumulated ones (gradient accumulation with one collective).

Over MPI's transport (ranks on several hosts) a bucket's all-reduce is non-blocking: it starts
when the bucket is complete and runs while the backward goes on (each further gradient lets it
progress); the results are collected in bucket order when the backward ends.  On shared memory
(one host) the all-reduce completes when started, between two steps of the backward: one
collective per bucket, as early as the bucket is complete, but not alongside computation.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..eager import tape
from ..eager.tensor import Tensor
from ..nn.layer import Layer
from ..ops.collective import current_communicator


class _Reducer:
    def __init__(self, params, comm, bucket_mb, first_mb):
        self.comm = comm
        self.buckets = []
        current, size, limit = [], 0, first_mb * (1 << 20)
        for p in reversed(params):
            nbytes = p._value.nbytes
            if current and (size + nbytes > limit or p._value.dtype != current[0]._value.dtype):
                self.buckets.append(current)
                current, size, limit = [], 0, bucket_mb * (1 << 20)
            current.append(p)
            size += nbytes
        if current:
            self.buckets.append(current)
        self.where = {id(p): k for k, bucket in enumerate(self.buckets) for p in bucket}
        self.enabled = True
        self._reset()

    def _reset(self):
        self.ready = [0] * len(self.buckets)
        self.next = 0
        self.touched = False
        self.inflight = []   # (bucket, handle) of started all-reduces, in bucket order

    def leaf_ready(self, tensor) -> None:
        for _, handle in self.inflight:
            handle.test()   # lets a non-blocking collective progress
        k = self.where.get(id(tensor))
        if k is None or not self.enabled:
            return
        self.ready[k] += 1
        self.touched = True
        while self.next < len(self.buckets) and self.ready[self.next] >= len(self.buckets[self.next]):
            self._start(self.buckets[self.next])
            self.next += 1

    def backward_done(self) -> None:
        if self.enabled and self.touched:
            while self.next < len(self.buckets):
                self._start(self.buckets[self.next])
                self.next += 1
        for bucket, handle in self.inflight:
            self._finish(bucket, handle.wait())
        self._reset()

    def _start(self, bucket) -> None:
        grads = [p._grad._value if p._grad is not None else np.zeros_like(p._value) for p in bucket]
        start = getattr(self.comm, "start_all_reduce_sum_many", None)
        if start is None:
            self._finish(bucket, self.comm.all_reduce_sum_many(grads))
        else:
            self.inflight.append((bucket, start(grads)))

    def _finish(self, bucket, totals) -> None:
        world = self.comm.world_size
        for p, total in zip(bucket, totals):
            total = np.asarray(total, dtype=p._value.dtype).reshape(p._value.shape)   # fresh: ours
            total /= world
            p._grad = Tensor._wrap(total)
            p._grad_owned = True


class DataParallel(Layer):
    """Run ``layers`` data parallel: gradients all-reduced across the ranks in buckets."""

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: layers must be a Layer, got {type(layers).__name__}")
        if comm_buffer_size <= 0 or last_comm_buffer_size <= 0:
            raise ValueError("DataParallel: comm_buffer_size and last_comm_buffer_size must be positive "
                             f"(MB), got {comm_buffer_size} and {last_comm_buffer_size}")
        self._layers = layers
        self.find_unused_parameters = find_unused_parameters
        comm = current_communicator()
        self._reducer = None
        if comm.world_size > 1:
            self._sync_params(comm)
            params = [p for p in layers.parameters() if isinstance(p, Tensor) and not p.stop_gradient]
            self._reducer = _Reducer(params, comm, comm_buffer_size, last_comm_buffer_size)
            tape.grad_listeners.append(self._reducer)

    def _sync_params(self, comm) -> None:
        state = [t for t in self._layers.state_dict().values() if isinstance(t, Tensor)]
        values = comm.broadcast([t._value for t in state], [0] * len(state))
        for t, v in zip(state, values):
            if v is not t._value:
                t._value = np.array(v, copy=True)

    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside the block only accumulates local gradients (no communication)."""
        reducer = self._reducer
        if reducer is None:
            yield
            return
        old, reducer.enabled = reducer.enabled, False
        try:
            yield
        finally:
            reducer.enabled = old

    def scale_loss(self, loss):
        """The reference's 1.x API: the loss unchanged (gradients are averaged in the all-reduce)."""
        return loss

    def apply_collective_grads(self):
        """The reference's 1.x API: nothing to do (gradients were all-reduced during backward)."""

    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="", use_hook=True):
        return self._layers.state_dict(destination, include_sublayers, structured_name_prefix, use_hook)

    def set_state_dict(self, state_dict, use_structured_name=True):
        return self._layers.set_state_dict(state_dict, use_structured_name)

    set_dict = set_state_dict
    load_dict = set_state_dict
