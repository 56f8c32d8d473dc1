"""``paddle.fluid.optimizer``: the 1.x names and argument orders (``parameter_list=``,
``regularization=``) over headrace's optimizers."""
from __future__ import annotations

from ..optimizer import Adam as _Adam
from ..optimizer import Momentum as _Momentum
from ..optimizer import Optimizer, RecomputeOptimizer
from ..optimizer.lars import LarsMomentum as LarsMomentumOptimizer
from ..optimizer import SGD as _SGD
from .optimizer_more import *  # noqa: F401,F403  (Adagrad, RMSProp, Adadelta, Adamax, Lamb, DecayedAdagrad)
from .optimizer_more import __all__ as _more


class SGDOptimizer(_SGD):
    def __init__(self, learning_rate, parameter_list=None, regularization=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)


class MomentumOptimizer(_Momentum):
    def __init__(self, learning_rate, momentum, parameter_list=None, use_nesterov=False,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, momentum, parameter_list, use_nesterov, regularization,
                         grad_clip, name=name)


class AdamOptimizer(_Adam):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None,
                 lazy_mode=False):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, lazy_mode, name)


SGD = SGDOptimizer
LarsMomentum = LarsMomentumOptimizer
Momentum = MomentumOptimizer
Adam = AdamOptimizer

__all__ = ["Adam", "AdamOptimizer", "LarsMomentum", "LarsMomentumOptimizer", "Momentum", "MomentumOptimizer", "Optimizer",
           "RecomputeOptimizer", "SGD", "SGDOptimizer"] + _more
