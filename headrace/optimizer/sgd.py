"""SGD: ``param -= lr * grad``."""
from __future__ import annotations

from .optimizer import Optimizer


class SGD(Optimizer):
    """Plain gradient descent. ``SGD(learning_rate=0.001, parameters=None)``; in static mode call
    ``minimize(loss)`` (or ``backward`` + ``apply_gradients``)."""

    type = "sgd"

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)

    def _append_optimize_op(self, param, grad):
        return self._update_op("sgd", {"Param": param, "Grad": grad,
                                       "LearningRate": self._param_learning_rate(param)},
                               {"ParamOut": param})
