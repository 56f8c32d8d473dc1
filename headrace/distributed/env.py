"""``init_parallel_env``, ``get_rank``, ``get_world_size``, ``ParallelEnv``: the process group.

A process started by an MPI launcher (``python -m headrace.distributed.launch --nproc_per_node N
train.py``, or ``mpiexec -n N python train.py``) is one rank of the group; ``init_parallel_env()``
joins it (``runtime/mpi_world.py``: rendezvous with a timeout, MPI, fault handling) and makes the
MPI communicator the process's communicator, so collective ops, ``DataParallel`` and the
``paddle.distributed`` collectives reach the other ranks.  A process started without a launcher is
a group of one: rank 0 of 1, every collective the identity, and MPI is not needed.
"""
from __future__ import annotations

from ..ops.collective import current_communicator, set_process_communicator
from ..runtime.mpi_world import launched_rank


_initialized = [False]


def init_parallel_env():
    """Join the group this process was launched in (idempotent); returns ``ParallelEnv()``."""
    from ..runtime.mpi_comm import communicator

    comm = communicator()
    if comm is not None:
        set_process_communicator(comm)
    _initialized[0] = True
    return ParallelEnv()


def _comm():
    return current_communicator()


def get_rank(group=None) -> int:
    """This process's rank (0 .. world size - 1); before ``init_parallel_env``, what the launcher set."""
    comm = _comm()
    return comm.rank if comm.world_size > 1 else launched_rank()[0]


def get_world_size(group=None) -> int:
    """The number of ranks; before ``init_parallel_env``, what the launcher set (1 without one)."""
    comm = _comm()
    return comm.world_size if comm.world_size > 1 else launched_rank()[1]


def is_initialized() -> bool:
    """Whether ``init_parallel_env`` (or ``fleet.init``) has run in this process."""
    return _initialized[0]


class ParallelEnv:
    """``paddle.distributed.ParallelEnv``: rank, world size and device of this process."""

    @property
    def rank(self) -> int:
        return get_rank()

    @property
    def world_size(self) -> int:
        return get_world_size()

    local_rank = rank
    nranks = world_size

    @property
    def device_id(self) -> int:
        return 0

    dev_id = device_id
