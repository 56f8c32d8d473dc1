"""``BuildStrategy`` / ``ExecutionStrategy`` and the map from strategy flags to pass names.

Contract
--------
``BuildStrategy`` holds the options of the reference's ``paddle.static.BuildStrategy`` (seed-era
defaults); every assignment is validated at once (type, enum membership) and an unknown attribute
is an error listing the known ones.  Once a ``CompiledProgram`` has compiled with a strategy, the
strategy is *finalized* and further assignments are errors (the compiled passes would not see them).

``pipeline(strategy, num_places)`` turns the flags into an ordered list of ``(stage, [pass
names])``; stages are the points where ``debug_graphviz_path`` dumps the graph
(``original``, ``fused``, ``multi_devices``, then the memory stage which is not dumped).  This
module decides *which* passes run and in which order, nothing else: the passes themselves are
registered by name in ``passes/__init__.py``.

Defaults follow the seed (1.x) documentation: ``enable_inplace=False``, ``memory_optimize=None``
(= off: the executor always frees dead values, and the reference enables the pass under None only
when garbage collection is off), ``fuse_broadcast_ops=False``, ``remove_unnecessary_lock=True``.
"""
from __future__ import annotations

import enum


class ReduceStrategy(enum.IntEnum):
    AllReduce = 0
    Reduce = 1


class GradientScaleStrategy(enum.IntEnum):
    CoeffNumDevice = 0
    One = 1
    Customized = 2


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"BuildStrategy.{name} must be a bool (True or False), got "
                        f"{type(value).__name__} {value!r}")
    return value


def _check_optional_bool(name, value):
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"BuildStrategy.{name} must be True, False or None, got "
                        f"{type(value).__name__} {value!r}")
    return value


def _enum_check(enum_type):
    def check(name, value):
        if not isinstance(value, enum_type):
            members = ", ".join(f"BuildStrategy.{enum_type.__name__}.{m.name}" for m in enum_type)
            raise TypeError(f"BuildStrategy.{name} must be one of {members}, got {value!r}")
        return value
    return check


def _check_str(name, value):
    if not isinstance(value, str):
        raise TypeError(f"BuildStrategy.{name} must be a str (a path prefix, '' for none), got "
                        f"{type(value).__name__} {value!r}")
    return value


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"BuildStrategy.{name} must be a positive number, got {value!r}")
    return float(value)


# name -> (default, validator, what it does here)
_OPTIONS = {
    "reduce_strategy": (ReduceStrategy.AllReduce, _enum_check(ReduceStrategy),
                        "AllReduce: every place all-reduces gradients and updates its own copy; "
                        "Reduce: each parameter is updated on one place and broadcast"),
    "gradient_scale_strategy": (GradientScaleStrategy.CoeffNumDevice, _enum_check(GradientScaleStrategy),
                                "loss@GRAD per place: 1/places, 1, or fed by the user"),
    "debug_graphviz_path": ("", _check_str, "dump <path>_original_graph, _fused_graph, "
                                            "_multi_devices_graph (dot text)"),
    "enable_inplace": (False, _check_bool, "an op writes its output into a dying input's buffer"),
    "memory_optimize": (None, _check_optional_bool, "outputs reuse dead buffers of the same size"),
    "fuse_elewise_add_act_ops": (False, _check_bool, "elementwise_add + activation -> one fused op"),
    "fuse_relu_depthwise_conv": (False, _check_bool, "relu + depthwise_conv2d -> one fused op"),
    "fuse_broadcast_ops": (False, _check_bool, "Reduce mode: all parameter broadcasts in one op"),
    "enable_sequential_execution": (False, _check_bool, "ops run strictly in program order "
                                                        "(no update hoisting)"),
    "remove_unnecessary_lock": (True, _check_bool, "accepted; no effect on the CPU"),
    "sync_batch_norm": (False, _check_bool, "batch_norm statistics over the global batch"),
    "fuse_all_optimizer_ops": (False, _check_bool, "the sgd/momentum/adam updates of one optimizer run "
                                                   "once over flat buffers (AllReduce mode)"),
    "fuse_all_reduce_ops": (False, _check_bool, "gradients all-reduced in fused buckets, one collective "
                                                "per bucket (AllReduce mode, several places)"),
    "fuse_grad_size_in_MB": (32.0, lambda name, v: _check_positive(name, v),
                             "bucket size of fuse_all_reduce_ops (headrace; the reference reads a flag)"),
}


class BuildStrategy:
    """How ``CompiledProgram`` transforms a program (see the module docstring)."""

    ReduceStrategy = ReduceStrategy
    GradientScaleStrategy = GradientScaleStrategy

    def __init__(self):
        object.__setattr__(self, "_values", {name: spec[0] for name, spec in _OPTIONS.items()})
        object.__setattr__(self, "_finalized", False)

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"BuildStrategy has no attribute {name!r}; known: {', '.join(sorted(_OPTIONS))}")

    def __setattr__(self, name, value):
        if name not in _OPTIONS:
            raise AttributeError(f"BuildStrategy has no attribute {name!r}; known: "
                                 f"{', '.join(sorted(_OPTIONS))}")
        if self._finalized:
            raise RuntimeError(f"BuildStrategy.{name}: this strategy has already been used to compile "
                               "a program and can no longer be modified; create a new BuildStrategy")
        self._values[name] = _OPTIONS[name][1](name, value)

    def _finalize(self) -> None:
        object.__setattr__(self, "_finalized", True)

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"BuildStrategy({items})"


class ExecutionStrategy:
    """How the compiled program is run.  ``num_threads`` is accepted (one thread per place is
    always used); ``num_iteration_per_drop_scope`` / ``num_iteration_per_run`` must be >= 1
    (each ``run`` is one iteration; per-run temporaries are dropped at the end of every run)."""

    _FIELDS = {"num_threads": 0, "num_iteration_per_drop_scope": 100, "num_iteration_per_run": 1,
               "use_thread_barrier": False, "allow_op_delay": False}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._FIELDS))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"ExecutionStrategy has no attribute {name!r}; known: {', '.join(self._FIELDS)}")

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(f"ExecutionStrategy has no attribute {name!r}; known: {', '.join(self._FIELDS)}")
        default = self._FIELDS[name]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise TypeError(f"ExecutionStrategy.{name} must be a bool, got {value!r}")
        else:
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"ExecutionStrategy.{name} must be an int, got {value!r}")
            minimum = 0 if name == "num_threads" else 1
            if value < minimum:
                raise ValueError(f"ExecutionStrategy.{name} must be >= {minimum}, got {value}")
            if name == "num_iteration_per_run" and value != 1:
                raise ValueError("ExecutionStrategy.num_iteration_per_run: only 1 is supported "
                                 f"(one iteration per run), got {value}")
        self._values[name] = value


# --- flags -> passes ----------------------------------------------------------------------------
def pipeline(strategy: BuildStrategy, num_places: int) -> list:
    """Ordered ``[(stage, [pass names])]`` for ``strategy`` on ``num_places`` places."""
    fused = []
    if strategy.sync_batch_norm:
        fused.append("sync_batch_norm_pass")
    if strategy.fuse_elewise_add_act_ops:
        fused.append("fuse_elewise_add_act_pass")
    if strategy.fuse_relu_depthwise_conv:
        fused.append("fuse_relu_depthwise_conv_pass")
    multi = []
    reduce_mode = strategy.reduce_strategy == ReduceStrategy.Reduce and num_places > 1
    multi.append("reduce_mode_multi_devices_pass" if reduce_mode else "all_reduce_mode_multi_devices_pass")
    if reduce_mode and strategy.fuse_broadcast_ops:
        multi.append("fuse_broadcast_ops_pass")
    if not reduce_mode and num_places > 1 and strategy.fuse_all_reduce_ops:
        multi.append("fuse_all_reduce_op_pass")
    if not reduce_mode and strategy.fuse_all_optimizer_ops:   # as the reference: AllReduce mode only
        multi.append("fuse_all_optimizer_ops_pass")
    memory = []
    if strategy.enable_sequential_execution:
        memory.append("sequential_execution_pass")
    if strategy.enable_inplace:
        memory.append("buffer_shared_inplace_pass")
    if strategy.memory_optimize:
        memory.append("memory_optimize_pass")
    return [("original", []), ("fused", fused), ("multi_devices", multi), ("memory", memory)]
