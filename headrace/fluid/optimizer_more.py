"""fluid 1.x optimizer names (``parameter_list=``, ``regularization=``) over Adagrad, DecayedAdagrad,
RMSProp, Adadelta, Adamax and Lamb; re-exported by ``fluid.optimizer``."""
from __future__ import annotations

from ..optimizer.adam_family import Lamb as _Lamb
from ..optimizer.adaptive import Adadelta as _Adadelta
from ..optimizer.adaptive import Adagrad as _Adagrad
from ..optimizer.adaptive import Adamax as _Adamax
from ..optimizer.adaptive import DecayedAdagrad as _DecayedAdagrad
from ..optimizer.adaptive import RMSProp as _RMSProp
from ..optimizer.regularizer import check_regularizer


class AdagradOptimizer(_Adagrad):
    def __init__(self, learning_rate, epsilon=1.0e-6, parameter_list=None, regularization=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, epsilon, parameter_list, regularization, grad_clip, name,
                         initial_accumulator_value)


class DecayedAdagradOptimizer(_DecayedAdagrad):
    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, decay, epsilon, parameter_list, regularization, grad_clip, name)


class RMSPropOptimizer(_RMSProp):
    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, rho, epsilon, momentum, centered, parameter_list, regularization,
                         grad_clip, name)


class AdadeltaOptimizer(_Adadelta):
    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, epsilon, rho, parameter_list, regularization, grad_clip, name)


class AdamaxOptimizer(_Adamax):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization, grad_clip, name)


class LambOptimizer(_Lamb):
    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 parameter_list=None, regularization=None, grad_clip=None, exclude_from_weight_decay_fn=None,
                 name=None):
        super().__init__(learning_rate, lamb_weight_decay, beta1, beta2, epsilon, parameter_list, grad_clip,
                         exclude_from_weight_decay_fn, name=name)
        self._regularization = check_regularizer(regularization, "LambOptimizer: regularization")


Adagrad = AdagradOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
RMSProp = RMSPropOptimizer
Adadelta = AdadeltaOptimizer
Adamax = AdamaxOptimizer
Lamb = LambOptimizer

__all__ = ["Adadelta", "AdadeltaOptimizer", "Adagrad", "AdagradOptimizer", "Adamax", "AdamaxOptimizer",
           "DecayedAdagrad", "DecayedAdagradOptimizer", "Lamb", "LambOptimizer", "RMSProp", "RMSPropOptimizer"]
