"""``RecomputeOptimizer``: an optimizer wrapper whose backward recomputes activations.

It appends the backward with the checkpoints set by ``_set_checkpoints``
(``append_backward(..., checkpoints=...)``: the plain backward, then the recompute pass
``passes/recompute.py``) and leaves everything else — learning rate, accumulators, update ops —
to the wrapped optimizer.  Static mode only, as in the reference.
"""
from __future__ import annotations

import logging

from ..core import context
from ..core.variable import Variable
from .optimizer import Optimizer, append_backward
from ..core.errors import ArgTypeError, located

log = logging.getLogger("headrace.recompute")


class RecomputeOptimizer(Optimizer):
    """Wraps ``optimizer``; call ``_set_checkpoints([...])`` before ``minimize``/``backward``."""

    def __init__(self, optimizer):
        if context.in_dynamic_mode():
            raise RuntimeError("RecomputeOptimizer works on static programs; in dygraph mode use "
                               "headrace.distributed.fleet.utils.recompute(function, *args)")
        if not isinstance(optimizer, Optimizer):
            raise located(ArgTypeError, "RecomputeOptimizer(optimizer): optimizer must be an Optimizer (e.g. "
                            f"fluid.optimizer.Adam(...)), got {type(optimizer).__name__}")
        if isinstance(optimizer, RecomputeOptimizer):
            raise located(ArgTypeError, "RecomputeOptimizer(optimizer): the optimizer is already a RecomputeOptimizer")
        # not Optimizer.__init__: the learning rate and accumulators are the inner optimizer's
        self._optimizer = optimizer
        self._checkpoints = None
        self.type = "recompute"

    # the inner optimizer's state, seen through the wrapper
    @property
    def _learning_rate(self):
        return self._optimizer._learning_rate

    @property
    def _parameter_list(self):
        return self._optimizer._parameter_list

    def get_lr(self) -> float:
        return self._optimizer.get_lr()

    def current_step_lr(self) -> float:
        return self._optimizer.current_step_lr()

    def set_lr(self, value) -> None:
        self._optimizer.set_lr(value)

    def _global_learning_rate(self, program=None):
        return self._optimizer._global_learning_rate(program)

    def _get_accumulator(self, name, param):
        return self._optimizer._get_accumulator(name, param)

    # ------------------------------------------------------------------------------------------
    def _set_checkpoints(self, checkpoints) -> None:
        """The variables (or their names) kept from the forward pass; a list."""
        if not isinstance(checkpoints, list) or not all(isinstance(c, (Variable, str)) for c in checkpoints):
            raise located(ArgTypeError, "_checkpoints should be a list of Variable or a list of String, got "
                            f"{checkpoints!r}")
        self._checkpoints = list(checkpoints)

    def load(self, state_dict):
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        """``append_backward`` with the checkpoints; returns ``[(param, grad)]``."""
        if not isinstance(loss, Variable):
            raise located(ArgTypeError, f"RecomputeOptimizer.backward: loss must be a Variable, got {type(loss).__name__}")
        checkpoints = self._checkpoints
        if checkpoints is None:
            log.warning("RecomputeOptimizer: no checkpoints set (call _set_checkpoints first); the "
                        "backward keeps every activation, as without recompute")
            checkpoints = []
        params = parameter_list if parameter_list is not None else self._optimizer._parameter_list
        with context.program_guard(loss.block.program, startup_program):
            return append_backward(loss, params, no_grad_set, callbacks, checkpoints=checkpoints)

    def apply_gradients(self, params_grads) -> list:
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads) -> list:
        return self._optimizer.apply_optimize(loss, startup_program, params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 parameters=None, grad_clip=None):
        """``backward`` with checkpoints, then the inner optimizer's updates;
        returns ``(optimize_ops, params_grads)``."""
        params = parameter_list if parameter_list is not None else parameters
        with self._optimizer._grad_clip_for_call(grad_clip):
            params_grads = self.backward(loss, startup_program, params, no_grad_set)
            optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
        return optimize_ops, params_grads
