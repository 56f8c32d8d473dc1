"""LARS momentum (layer-wise adaptive rate scaling), one ``lars_momentum`` op per parameter.

``local_lr = lr * lars_coeff * ||p|| / (||g|| + wd * ||p|| + epsilon)`` (plain ``lr`` when wd,
||p|| or ||g|| is 0), ``v = mu * v + local_lr * (g + wd * p)``, ``p -= v``, with ``g`` the
gradient times ``rescale_grad``; the kernel is in ``ops/optim.py``.  A parameter whose name
contains any string of ``exclude_from_weight_decay`` gets wd = 0 (so plain momentum with the
full learning rate, as in the reference).  A ``regularization`` (the base class's weight decay)
is added to the gradient before the LARS op, independently of ``lars_weight_decay``.
"""
from __future__ import annotations

from .optimizer import Optimizer, check_float_arg
from ..core.errors import ArgTypeError, AttrError, located


class LarsMomentum(Optimizer):
    """``LarsMomentumOptimizer`` with the reference's argument order."""

    type = "lars_momentum"
    _velocity = "velocity"

    def __init__(self, learning_rate, momentum, lars_coeff=0.001, lars_weight_decay=0.0005,
                 parameter_list=None, regularization=None, grad_clip=None, name=None,
                 exclude_from_weight_decay=None, epsilon=0, multi_precision=False, rescale_grad=1.0):
        if learning_rate is None:
            raise located(AttrError, "LarsMomentumOptimizer: learning_rate is not set")
        if momentum is None:
            raise located(AttrError, "LarsMomentumOptimizer: momentum is not set")
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._momentum = check_float_arg(momentum, "momentum", low=0.0)
        self._lars_coeff = check_float_arg(lars_coeff, "lars_coeff", low=0.0)
        self._lars_weight_decay = check_float_arg(lars_weight_decay, "lars_weight_decay", low=0.0)
        self._epsilon = check_float_arg(epsilon, "epsilon", low=0.0)
        self._rescale_grad = check_float_arg(rescale_grad, "rescale_grad")
        self._multi_precision = bool(multi_precision)   # only float16 parameters would use it
        exclude = [] if exclude_from_weight_decay is None else exclude_from_weight_decay
        if isinstance(exclude, str) or not all(isinstance(e, str) for e in exclude):
            raise located(ArgTypeError, "exclude_from_weight_decay must be a list of strings (parts of parameter "
                            f"names), got {exclude_from_weight_decay!r}")
        self._exclude_from_weight_decay = list(exclude)

    def _weight_decay_of(self, name: str) -> float:
        if any(part in name for part in self._exclude_from_weight_decay):
            return 0.0
        return self._lars_weight_decay

    def _create_accumulators(self, params) -> None:
        for p in params:
            self._add_accumulator(self._velocity, p)

    def _append_optimize_op(self, param, grad):
        if self._multi_precision and str(param.dtype) == "float16":
            raise NotImplementedError(
                f"LarsMomentumOptimizer(multi_precision=True): parameter {param.name!r} is float16, which needs "
                "float32 master weights; this CPU build updates float32/float64 parameters only")
        velocity = self._get_accumulator(self._velocity, param)
        return self._update_op(
            "lars_momentum",
            {"Param": param, "Grad": grad, "Velocity": velocity,
             "LearningRate": self._param_learning_rate(param)},
            {"ParamOut": param, "VelocityOut": velocity},
            {"mu": self._momentum, "lars_coeff": self._lars_coeff,
             "lars_weight_decay": self._weight_decay_of(param.name), "epsilon": self._epsilon,
             "rescale_grad": self._rescale_grad})
