"""``paddle.distributed.all_reduce / broadcast / all_gather / barrier`` on eager Tensors.

They run on the process's communicator (``init_parallel_env``); in a group of one they change
nothing.  As the reference, ``all_reduce`` and ``broadcast`` write the result into the tensor
given, ``all_gather`` appends every rank's tensor to the list given.  In static mode
``all_reduce`` (SUM) and ``broadcast`` on a Variable append the collective op
(``c_allreduce_sum`` / ``c_broadcast``) writing the Variable, run with the program.
"""
from __future__ import annotations

import enum

import numpy as np

from ..ops.collective import current_communicator


class ReduceOp(enum.IntEnum):
    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


def _array(tensor, what):
    value = getattr(tensor, "_value", None)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"paddle.distributed.{what}: expected a Tensor, got {type(tensor).__name__}")
    return value


def _static_collective(tensor, op_type, what, attrs=None) -> bool:
    """Static mode: append ``op_type`` writing the Variable ``tensor``; False for a Tensor."""
    from ..core.variable import Variable

    if not isinstance(tensor, Variable):
        return False
    if op_type is None:
        raise NotImplementedError(f"paddle.distributed.{what} on a static Variable is not supported; "
                                  "call it in eager mode")
    tensor.block.append_op(op_type, {"X": [tensor]}, {"Out": [tensor]}, attrs or {})
    return True


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """``tensor`` becomes the sum (``ReduceOp.SUM``) or mean (``ReduceOp.AVG``) over the ranks."""
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise NotImplementedError(f"paddle.distributed.all_reduce: only ReduceOp.SUM and ReduceOp.AVG are "
                                  f"supported, got {op!r}")
    if _static_collective(tensor, "c_allreduce_sum" if op == ReduceOp.SUM else None, "all_reduce(op=AVG)"):
        return None
    value = _array(tensor, "all_reduce")
    comm = current_communicator()
    total = comm.all_reduce_sum(value)
    if op == ReduceOp.AVG:
        total = total / comm.world_size
    tensor._value = np.asarray(total, dtype=value.dtype).reshape(value.shape)
    return None


def broadcast(tensor, src=0, group=None, sync_op=True):
    """``tensor`` becomes rank ``src``'s value on every rank."""
    if _static_collective(tensor, "c_broadcast", "broadcast", {"root": int(src)}):
        return None
    value = _array(tensor, "broadcast")
    comm = current_communicator()
    if not 0 <= src < comm.world_size:
        raise ValueError(f"paddle.distributed.broadcast: src {src} is not a rank of a group of {comm.world_size}")
    tensor._value = comm.broadcast([value], [src])[0]
    return None


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """Append every rank's ``tensor`` (same shape on all ranks), in rank order, to ``tensor_list``."""
    from ..eager.tensor import Tensor

    if not isinstance(tensor_list, list):
        raise TypeError(f"paddle.distributed.all_gather: tensor_list must be a list, got {type(tensor_list).__name__}")
    _static_collective(tensor, None, "all_gather")
    value = _array(tensor, "all_gather")
    for array in current_communicator().all_gather(value):
        tensor_list.append(Tensor._wrap(np.array(array, copy=True)))
    return None


def barrier(group=None):
    """Return once every rank has called it."""
    current_communicator().barrier()
