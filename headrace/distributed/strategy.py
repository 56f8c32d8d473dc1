"""``fleet.DistributedStrategy``: what ``fleet.distributed_optimizer`` applies (collective mode).

Supported: ``recompute`` + ``recompute_configs`` (``checkpoints``, or ``"auto"`` with
``memory_budget`` in bytes per rank and, for data shapes with -1 dims, ``feed``), ``lars`` + ``lars_configs``
(``lars_coeff``, ``lars_weight_decay``, ``epsilon``, ``exclude_from_weight_decay``),
``gradient_scale_configs`` (``scale_strategy``: ``avg`` | ``sum`` | ``customized``),
``fuse_all_reduce_ops`` + ``fuse_grad_size_in_MB``, ``sync_batch_norm``, ``build_strategy``,
``execution_strategy``.  Defaults are the reference's.  Setting any other of the reference's
strategy switches (amp, sharding, pipeline, ...) to a true value raises ``NotImplementedError``
naming it, rather than being ignored.
"""
from __future__ import annotations

import copy

from ..passes.strategy import BuildStrategy, ExecutionStrategy

_CONFIG_DEFAULTS = {
    # "checkpoints": "auto" with "memory_budget" (bytes per rank) lets headrace.memory choose them;
    # "feed" (name -> shape of this rank's batch) is needed when the data shapes have -1 dims
    "recompute_configs": {"checkpoints": [], "enable_offload": False, "checkpoint_shape": [],
                          "memory_budget": None, "feed": None},
    "lars_configs": {"lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0,
                     "exclude_from_weight_decay": []},
    "gradient_scale_configs": {"scale_strategy": "avg", "scale_gradient": False},
}
_FLAGS = {"recompute": False, "lars": False, "fuse_all_reduce_ops": True, "sync_batch_norm": False}
_UNSUPPORTED = ("amp", "sharding", "pipeline", "tensor_parallel", "localsgd", "adaptive_localsgd", "dgc",
                "gradient_merge", "lamb", "a_sync", "asp", "qat", "hybrid_configs_enabled")
_SCALES = ("avg", "sum", "customized")


class DistributedStrategy:
    """Switches and configs of data-parallel training (see the module docstring)."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_FLAGS, fuse_grad_size_in_MB=32,
                                                 **copy.deepcopy(_CONFIG_DEFAULTS)))
        object.__setattr__(self, "_build", BuildStrategy())
        object.__setattr__(self, "_execution", ExecutionStrategy())

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            value = values[name]
            return copy.deepcopy(value) if isinstance(value, dict) else value
        if name in _UNSUPPORTED:
            return False
        raise AttributeError(f"DistributedStrategy has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _FLAGS:
            if not isinstance(value, bool):
                raise TypeError(f"DistributedStrategy.{name} must be a bool, got {value!r}")
            self._values[name] = value
        elif name in _CONFIG_DEFAULTS:
            self._values[name] = self._merge(name, value)
        elif name == "fuse_grad_size_in_MB":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"DistributedStrategy.fuse_grad_size_in_MB must be a positive number, got {value!r}")
            self._values[name] = value
        elif name == "build_strategy":
            if not isinstance(value, BuildStrategy):
                raise TypeError(f"DistributedStrategy.build_strategy must be a BuildStrategy, got {type(value).__name__}")
            object.__setattr__(self, "_build", value)
        elif name == "execution_strategy":
            if not isinstance(value, ExecutionStrategy):
                raise TypeError("DistributedStrategy.execution_strategy must be an ExecutionStrategy, got "
                                f"{type(value).__name__}")
            object.__setattr__(self, "_execution", value)
        elif name in _UNSUPPORTED:
            if value:
                raise NotImplementedError(f"DistributedStrategy.{name} is not supported by headrace yet")
        else:
            raise AttributeError(f"DistributedStrategy has no attribute {name!r}")

    @staticmethod
    def _merge(name, value) -> dict:
        if not isinstance(value, dict):
            raise TypeError(f"DistributedStrategy.{name} must be a dict, got {type(value).__name__}")
        known = _CONFIG_DEFAULTS[name]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"DistributedStrategy.{name}: unknown key(s) {unknown}; known: {sorted(known)}")
        merged = copy.deepcopy(known)
        merged.update(copy.deepcopy(value))
        if name == "gradient_scale_configs" and merged["scale_strategy"] not in _SCALES:
            raise ValueError(f"gradient_scale_configs['scale_strategy'] must be one of {_SCALES}, got "
                             f"{merged['scale_strategy']!r}")
        if name == "recompute_configs" and merged["enable_offload"]:
            raise NotImplementedError("recompute_configs['enable_offload'] is not supported (no device memory to offload from)")
        if name == "recompute_configs" and merged["checkpoints"] == "auto":
            budget = merged["memory_budget"]
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
                raise ValueError("recompute_configs: checkpoints 'auto' needs memory_budget, a positive number of "
                                 f"bytes per rank, got {budget!r}")
        return merged

    @property
    def build_strategy(self) -> BuildStrategy:
        return self._build

    @property
    def execution_strategy(self) -> ExecutionStrategy:
        return self._execution

    def __repr__(self):
        return f"DistributedStrategy({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"
