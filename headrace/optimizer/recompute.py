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
from ..core.errors import ArgTypeError, AttrError, located

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
    def _set_checkpoints(self, checkpoints, budget=None, feed=None) -> None:
        """The variables (or their names) kept from the forward pass; a list.  Or ``"auto"`` with
        ``budget`` (bytes): ``headrace.memory.plan_checkpoints`` chooses them when the backward is
        built, for the shapes in ``feed`` (name -> shape; default: the data variables' declared
        shapes, which must then be fully known), counting the optimizer's state too."""
        if isinstance(checkpoints, str) and checkpoints == "auto":
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
                raise located(AttrError, f"_set_checkpoints('auto', budget=...): budget must be a positive number of "
                                 f"bytes, got {budget!r}")
            if feed is not None and not isinstance(feed, dict):
                raise located(ArgTypeError, f"_set_checkpoints('auto', feed=...): feed must be a dict of name -> shape, got "
                                f"{type(feed).__name__}")
            self._checkpoints = ("auto", budget, feed)
            return
        if budget is not None or feed is not None:
            raise located(AttrError, "_set_checkpoints: budget and feed go with checkpoints='auto'")
        if not isinstance(checkpoints, list) or not all(isinstance(c, (Variable, str)) for c in checkpoints):
            raise located(ArgTypeError, "_checkpoints should be a list of Variable or a list of String (or 'auto' "
                          f"with a budget), got {checkpoints!r}")
        self._checkpoints = list(checkpoints)

    def _auto_checkpoints(self, loss, no_grad_set) -> list:
        from ..memory import plan_checkpoints

        _, budget, feed = self._checkpoints
        if feed is None:
            feed = _declared_feed(loss.block.program)
        chosen = plan_checkpoints(loss, budget, feed, no_grad_set=no_grad_set, optimizer=self._optimizer)
        log.info("RecomputeOptimizer: checkpoints chosen for a budget of %d bytes: %s", budget,
                 [v.name for v in chosen])
        self.chosen_checkpoints = chosen
        return chosen

    def load(self, state_dict):
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        """``append_backward`` with the checkpoints; returns ``[(param, grad)]``."""
        if not isinstance(loss, Variable):
            raise located(ArgTypeError, f"RecomputeOptimizer.backward: loss must be a Variable, got {type(loss).__name__}")
        checkpoints = self._checkpoints
        if isinstance(checkpoints, tuple):
            checkpoints = self._auto_checkpoints(loss, no_grad_set)
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


def _declared_feed(program) -> dict:
    """The data variables' declared shapes, for ``_set_checkpoints('auto')`` without ``feed``."""
    feed = {}
    for var in program.list_vars():
        if var.is_data:
            if var.shape is None or any(d < 0 for d in var.shape):
                raise ValueError(f"_set_checkpoints('auto'): data variable {var.name!r} has shape {list(var.shape)}; "
                                 f"give the shapes to plan for: _set_checkpoints('auto', budget=..., "
                                 f"feed={{{var.name!r}: [batch, ...]}})")
            feed[var.name] = list(var.shape)
    return feed
