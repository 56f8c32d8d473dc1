"""``paddle.distributed``: the process group, collectives, ``DataParallel``, ``spawn``, ``fleet``.

Multi-process runs use MPI (``pip install 'headrace[mpi]'``); see the README section "Training on
several processes or machines".  ``launch`` (``python -m headrace.distributed.launch``) starts the
ranks.
"""
from . import fleet
from .collective import ReduceOp, all_gather, all_reduce, barrier, broadcast
from .data_parallel import DataParallel
from .env import ParallelEnv, get_rank, get_world_size, init_parallel_env, is_initialized
from .spawn import spawn
from .strategy import DistributedStrategy

__all__ = ["DataParallel", "DistributedStrategy", "ParallelEnv", "ReduceOp", "all_gather", "all_reduce",
           "barrier", "broadcast", "fleet", "get_rank", "get_world_size", "init_parallel_env", "is_initialized",
           "spawn"]
