"""Adaptive-rate optimizers: Adagrad, DecayedAdagrad (fluid 1.x), RMSProp, Adadelta, Adamax.

Update formulas are the reference's (the ops' ``doc`` in ``ops/optim_more.py``); argument names,
orders and defaults are ``paddle.optimizer``'s.  A hyper-parameter given as ``None`` raises
``ValueError('<name> is not set.')`` as the reference does.
"""
from __future__ import annotations

from .optimizer import check_float_arg
from .table import TableOptimizer, require


class Adagrad(TableOptimizer):
    """``moment += g^2; p -= lr * g / (sqrt(moment) + epsilon)``; ``moment`` starts at
    ``initial_accumulator_value``."""

    type = "adagrad"
    _table = (("Moment", "moment", "_initial_accumulator_value", False),)

    def __init__(self, learning_rate, epsilon=1.0e-6, parameters=None, weight_decay=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        self._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)
        self._initial_accumulator_value = check_float_arg(initial_accumulator_value, "initial_accumulator_value",
                                                          low=0.0)

    def _attrs(self, param):
        return {"epsilon": self._epsilon}


class DecayedAdagrad(TableOptimizer):
    """fluid 1.x ``DecayedAdagradOptimizer``: ``moment = decay * moment + (1 - decay) * g^2``;
    ``p -= lr * g / (sqrt(moment) + epsilon)``."""

    type = "decayed_adagrad"
    _table = (("Moment", "moment", 0.0, False),)

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        self._decay = check_float_arg(require(decay, "decay"), "decay", low=0.0)
        self._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)

    def _attrs(self, param):
        return {"decay": self._decay, "epsilon": self._epsilon}


class RMSProp(TableOptimizer):
    """``ms = rho ms + (1 - rho) g^2``; ``mom = momentum mom + lr g / sqrt(ms + eps)`` (centered:
    ``sqrt(ms - mg^2 + eps)`` with ``mg = rho mg + (1 - rho) g``); ``p -= mom``."""

    type = "rmsprop"
    _table = (("Moment", "momentum", 0.0, False), ("MeanSquare", "mean_square", 0.0, False),
              ("MeanGrad", "mean_grad", 0.0, False))

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        self._rho = check_float_arg(require(rho, "rho"), "rho", low=0.0)
        self._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)
        self._momentum = check_float_arg(require(momentum, "momentum"), "momentum", low=0.0)
        self._centered = bool(centered)

    def _attrs(self, param):
        return {"decay": self._rho, "epsilon": self._epsilon, "momentum": self._momentum,
                "centered": self._centered}


class Adadelta(TableOptimizer):
    """``E[g^2] = rho E[g^2] + (1 - rho) g^2``; ``u = -sqrt(E[u^2] + eps) / sqrt(E[g^2] + eps) * g``;
    ``p += lr * u``; ``E[u^2] = rho E[u^2] + (1 - rho) u^2`` (the learning rate scales the step,
    as in the reference since 2.x; fluid 1.x's kernel ignored it)."""

    type = "adadelta"
    _table = (("AvgSquaredGrad", "_avg_squared_grad", 0.0, False),
              ("AvgSquaredUpdate", "_avg_squared_update", 0.0, False))

    def __init__(self, learning_rate=0.001, epsilon=1.0e-6, rho=0.95, parameters=None, weight_decay=None,
                 grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        self._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)
        self._rho = check_float_arg(require(rho, "rho"), "rho", low=0.0)

    def _attrs(self, param):
        return {"rho": self._rho, "epsilon": self._epsilon}


class Adamax(TableOptimizer):
    """``m = b1 m + (1 - b1) g``; ``u = max(b2 u + eps, |g|)``; ``p -= lr / (1 - b1^t) * m / u``."""

    type = "adamax"
    _table = (("Moment", "moment", 0.0, False), ("InfNorm", "inf_norm", 0.0, False),
              ("Beta1Pow", "beta1_pow_acc", "_beta1", True))

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1.0e-8, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        self._beta1 = check_float_arg(require(beta1, "beta1"), "beta1", low=0.0, high=1.0, high_open=True)
        self._beta2 = check_float_arg(require(beta2, "beta2"), "beta2", low=0.0, high=1.0, high_open=True)
        self._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)

    def _attrs(self, param):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}


__all__ = ["Adadelta", "Adagrad", "Adamax", "DecayedAdagrad", "RMSProp"]
