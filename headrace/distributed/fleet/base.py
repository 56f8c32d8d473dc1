"""``paddle.distributed.fleet`` in collective mode: ``init``, ``distributed_optimizer``, worker info.

Static mode, ``fleet.distributed_optimizer(opt, strategy).minimize(loss)``:
1. meta-optimizers, as the reference: ``lars`` turns a ``Momentum`` into ``LarsMomentum`` with
   ``lars_configs`` (another optimizer: a warning, LARS not applied); ``recompute`` with
   non-empty ``recompute_configs['checkpoints']`` wraps the optimizer in ``RecomputeOptimizer``
   (``"auto"`` with ``memory_budget``: the checkpoints ``headrace.memory.plan_checkpoints`` chooses);
2. the optimizer's ``minimize`` builds backward and updates;
3. the main program is rewritten for this rank of ``worker_num()`` ranks by the same passes as
   ``with_data_parallel`` (``sync_batch_norm`` if asked, the loss gradient scaled per
   ``gradient_scale_configs``, gradients all-reduced, in buckets of ``fuse_grad_size_in_MB`` with
   ``fuse_all_reduce_ops``; with ``build_strategy``'s fusions, e.g. ``fuse_elewise_add_act_ops``),
   and the startup program ends with a broadcast of every parameter from rank 0.  Always
   AllReduce (``build_strategy.reduce_strategy`` is not used); the memory passes
   (``enable_inplace``, ``memory_optimize``) need the fetch targets, so they apply only through
   ``CompiledProgram``.  So ``exe.run(startup)`` then ``exe.run(main, feed=<this rank's batch>)`` trains
   data parallel, as in the reference.
Dygraph: ``fleet.distributed_model(layer)`` is ``paddle.DataParallel(layer)``;
``distributed_optimizer`` returns the optimizer (the gradients are combined by DataParallel).
"""
from __future__ import annotations

import warnings

from ...core import context
from ...core.errors import HeadraceError
from ...core.names import grad_name
from ...optimizer.lars import LarsMomentum
from ...optimizer.momentum import Momentum
from ...optimizer.recompute import RecomputeOptimizer
from ...passes import PassContext, run_passes
from ...passes.strategy import pipeline
from ..env import get_rank, get_world_size, init_parallel_env
from ..strategy import DistributedStrategy

_SCALE = {"avg": 0, "sum": 1, "customized": 2}


class FleetError(HeadraceError, RuntimeError):
    pass


class Fleet:
    def __init__(self):
        self._initialized = False
        self._strategy = None
        self._optimizer = None

    def init(self, role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
        """Join the process group (collective mode only)."""
        if not is_collective:
            raise NotImplementedError("fleet.init: parameter-server mode is not supported by headrace; "
                                      "use fleet.init(is_collective=True)")
        if strategy is not None and not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"fleet.init: strategy must be a DistributedStrategy, got {type(strategy).__name__}")
        init_parallel_env()
        self._strategy = strategy
        self._initialized = True

    def _check_init(self, what):
        if not self._initialized:
            raise FleetError(f"fleet.{what}: call fleet.init(is_collective=True) first")

    def worker_index(self) -> int:
        return get_rank()

    def worker_num(self) -> int:
        return get_world_size()

    def is_first_worker(self) -> bool:
        return self.worker_index() == 0

    def barrier_worker(self) -> None:
        from ..collective import barrier

        barrier()

    def distributed_model(self, model):
        self._check_init("distributed_model")
        from ..data_parallel import DataParallel

        return DataParallel(model)

    def distributed_optimizer(self, optimizer, strategy=None):
        self._check_init("distributed_optimizer")
        strategy = strategy if strategy is not None else (self._strategy or DistributedStrategy())
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"fleet.distributed_optimizer: strategy must be a DistributedStrategy, got "
                            f"{type(strategy).__name__}")
        if context.in_dynamic_mode():
            if strategy.recompute or strategy.lars:
                raise NotImplementedError("fleet.distributed_optimizer in dygraph mode: the recompute and lars "
                                          "meta-optimizers are static only; use fleet.utils.recompute and "
                                          "LarsMomentum directly")
            return optimizer
        self._optimizer, self._strategy = optimizer, strategy
        return self

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if self._optimizer is None:
            raise FleetError("fleet.minimize: call fleet.distributed_optimizer(optimizer, strategy) first")
        strategy = self._strategy
        optimizer = self._meta_optimizer(self._optimizer, strategy)
        result = optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        program = loss.block.program
        startup = startup_program if startup_program is not None else context.default_startup_program()
        self._data_parallel(program, startup, loss, strategy)
        return result

    @staticmethod
    def _meta_optimizer(optimizer, strategy):
        if strategy.lars:
            if isinstance(optimizer, Momentum):
                cfg = strategy.lars_configs
                optimizer = LarsMomentum(
                    learning_rate=optimizer._learning_rate, momentum=optimizer._momentum,
                    lars_coeff=cfg["lars_coeff"], lars_weight_decay=cfg["lars_weight_decay"],
                    parameter_list=optimizer._parameter_list, regularization=optimizer._regularization,
                    grad_clip=optimizer._grad_clip, name=optimizer._name,
                    exclude_from_weight_decay=cfg["exclude_from_weight_decay"], epsilon=cfg["epsilon"])
            else:
                warnings.warn(f"lars needs the inner optimizer to be Momentum, got {type(optimizer).__name__}; "
                              "LARS is not applied", stacklevel=4)
        cfg = strategy.recompute_configs
        checkpoints = cfg["checkpoints"]
        if strategy.recompute and checkpoints == "auto":   # headrace.memory chooses them under the budget
            optimizer = RecomputeOptimizer(optimizer)
            optimizer._set_checkpoints("auto", budget=cfg["memory_budget"], feed=cfg["feed"])
        elif strategy.recompute and checkpoints:
            optimizer = RecomputeOptimizer(optimizer)
            optimizer._set_checkpoints(checkpoints)
        return optimizer

    @staticmethod
    def _data_parallel(program, startup, loss, strategy) -> None:
        world, rank = get_world_size(), get_rank()
        scale = _SCALE[strategy.gradient_scale_configs["scale_strategy"]]
        feeds = (grad_name(loss.name),) if scale == 2 else ()
        ctx = PassContext(num_places=world, place_index=rank, loss_name=loss.name, gradient_scale=scale,
                          feeds=feeds, fuse_grad_bytes=int(strategy.fuse_grad_size_in_MB * (1 << 20)) or 1)
        build = strategy.build_strategy
        names = [n for n in dict(pipeline(build, 1))["fused"] if n != "sync_batch_norm_pass"]
        if strategy.sync_batch_norm or build.sync_batch_norm:
            names.insert(0, "sync_batch_norm_pass")
        names.append("all_reduce_mode_multi_devices_pass")
        if (strategy.fuse_all_reduce_ops or build.fuse_all_reduce_ops) and world > 1:
            names.append("fuse_all_reduce_op_pass")
        run_passes(program, names, ctx)
        program._fleet_ranks = world
        if world > 1:
            params = [p.name for p in program.all_parameters()]
            block = startup.global_block()
            present = [n for n in params if block._find_var_recursive(n) is not None]
            if present:
                block.append_op("c_broadcast", {"X": present}, {"Out": present}, {"root": 0})


fleet = Fleet()
