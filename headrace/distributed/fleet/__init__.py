"""``paddle.distributed.fleet``: ``recompute`` (dygraph activation recompute), ``utils``, and the
collective-mode fleet API (``init``, ``DistributedStrategy``, ``distributed_optimizer``, ...)."""
from . import utils
from .utils import recompute
from ..strategy import DistributedStrategy
from .base import fleet as _fleet

init = _fleet.init
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
is_first_worker = _fleet.is_first_worker
barrier_worker = _fleet.barrier_worker
distributed_optimizer = _fleet.distributed_optimizer
distributed_model = _fleet.distributed_model
minimize = _fleet.minimize

__all__ = ["DistributedStrategy", "barrier_worker", "distributed_model", "distributed_optimizer", "init",
           "is_first_worker", "minimize", "recompute", "utils", "worker_index", "worker_num"]
