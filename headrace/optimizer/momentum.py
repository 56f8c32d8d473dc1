"""Momentum: ``v = mu * v + grad``; ``param -= lr * v`` (Nesterov: ``lr * (grad + mu * v)``)."""
from __future__ import annotations

from .optimizer import Optimizer, check_float_arg


class Momentum(Optimizer):
    """Momentum SGD with one zero-initialised ``velocity`` accumulator per parameter;
    ``use_nesterov`` steps with ``grad + momentum * velocity``; ``rescale_grad`` scales the
    gradient first."""

    type = "momentum"
    _velocity = "velocity"

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, rescale_grad=1.0, name=None):
        if learning_rate is None:
            raise ValueError("learning_rate is not set")
        if momentum is None:
            raise ValueError("momentum is not set")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._momentum = check_float_arg(momentum, "momentum", low=0.0)
        self._use_nesterov = bool(use_nesterov)
        self._rescale_grad = check_float_arg(rescale_grad, "rescale_grad")

    def _create_accumulators(self, params) -> None:
        for p in params:
            self._add_accumulator(self._velocity, p)

    def _append_optimize_op(self, param, grad):
        velocity = self._get_accumulator(self._velocity, param)
        return self._update_op(
            "momentum",
            {"Param": param, "Grad": grad, "Velocity": velocity,
             "LearningRate": self._param_learning_rate(param)},
            {"ParamOut": param, "VelocityOut": velocity},
            {"mu": self._momentum, "use_nesterov": self._use_nesterov,
             "rescale_grad": self._rescale_grad})
