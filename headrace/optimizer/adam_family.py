"""Adam variants: AdamW (decoupled weight decay), Lamb (layer-wise trust ratio), NAdam (Nesterov
momentum), RAdam (rectified variance).  Formulas: the ops' ``doc`` in ``ops/optim_more.py``.
"""
from __future__ import annotations

import numbers

from .optimizer import check_float_arg
from .table import TableOptimizer, require


def _betas(opt, beta1, beta2, epsilon):
    opt._beta1 = check_float_arg(require(beta1, "beta1"), "beta1", low=0.0, high=1.0, high_open=True)
    opt._beta2 = check_float_arg(require(beta2, "beta2"), "beta2", low=0.0, high=1.0, high_open=True)
    opt._epsilon = check_float_arg(require(epsilon, "epsilon"), "epsilon", low=0.0)


def _callable_or_none(fn, what):
    if fn is not None and not callable(fn):
        raise TypeError(f"{what} must be a function or None, got {type(fn).__name__}: {fn!r}")
    return fn


class AdamW(TableOptimizer):
    """Adam with decoupled weight decay: ``p *= 1 - lr' * weight_decay`` before the Adam update,
    with ``lr' = lr * lr_ratio(p)``.  ``apply_decay_param_fun(name)`` returning False skips the
    decay for that parameter; ``lr_ratio(param)`` gives a per-parameter factor of the rate (the
    reference accepts it on GPU only; here it works on the CPU)."""

    type = "adamw"
    _table = (("Moment1", "moment1", 0.0, False), ("Moment2", "moment2", 0.0, False),
              ("Beta1Pow", "beta1_pow_acc", "_beta1", True), ("Beta2Pow", "beta2_pow_acc", "_beta2", True))

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=0.01, lr_ratio=None, apply_decay_param_fun=None, grad_clip=None, lazy_mode=False,
                 multi_precision=False, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, None, grad_clip, name)
        _betas(self, beta1, beta2, epsilon)
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, numbers.Real):
            raise TypeError(f"AdamW: weight_decay must be a float coefficient, got {type(weight_decay).__name__}: "
                            f"{weight_decay!r}")
        self._coeff = check_float_arg(weight_decay, "weight_decay", low=0.0)
        self._lr_ratio = _callable_or_none(lr_ratio, "AdamW: lr_ratio")
        self._apply_decay_param_fun = _callable_or_none(apply_decay_param_fun, "AdamW: apply_decay_param_fun")
        self._lazy_mode = bool(lazy_mode)
        self._multi_precision = bool(multi_precision)

    def _attrs(self, param):
        with_decay = self._apply_decay_param_fun is None or bool(self._apply_decay_param_fun(param.name))
        ratio = 1.0 if self._lr_ratio is None else check_float_arg(self._lr_ratio(param), "lr_ratio(param)", low=0.0)
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon, "lazy_mode": self._lazy_mode,
                "coeff": self._coeff, "lr_ratio": ratio, "with_decay": with_decay}


class Lamb(TableOptimizer):
    """LAMB: the bias-corrected Adam direction plus ``lamb_weight_decay * p``, scaled by the trust
    ratio ``||p|| / ||r||``.  ``exclude_from_weight_decay_fn(param)`` returning True sets the
    parameter's decay to 0 (and with it the trust ratio to 1 unless ``always_adapt``)."""

    type = "lamb"
    _table = (("Moment1", "moment1", 0.0, False), ("Moment2", "moment2", 0.0, False),
              ("Beta1Pow", "beta1_pow_acc", "_beta1", True), ("Beta2Pow", "beta2_pow_acc", "_beta2", True))

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 parameters=None, grad_clip=None, exclude_from_weight_decay_fn=None, multi_precision=False,
                 always_adapt=False, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, None, grad_clip, name)
        _betas(self, beta1, beta2, epsilon)
        self._lamb_weight_decay = check_float_arg(require(lamb_weight_decay, "lamb_weight_decay"),
                                                  "lamb_weight_decay", low=0.0)
        self._exclude_fn = _callable_or_none(exclude_from_weight_decay_fn, "Lamb: exclude_from_weight_decay_fn")
        self._multi_precision = bool(multi_precision)
        self._always_adapt = bool(always_adapt)

    def _attrs(self, param):
        excluded = self._exclude_fn is not None and bool(self._exclude_fn(param))
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                "weight_decay": 0.0 if excluded else self._lamb_weight_decay, "always_adapt": self._always_adapt}


class NAdam(TableOptimizer):
    """Adam with Nesterov momentum and the momentum schedule ``mu_t = beta1 (1 - 0.96^(t psi) / 2)``."""

    type = "nadam"
    _table = (("MomentumDecayPow", "momentum_decay_pow", 1.0, True), ("Beta2Pow", "beta2_pow", 1.0, True),
              ("MuProduct", "mu_product", 1.0, True), ("Moment1", "moment1", 0.0, False),
              ("Moment2", "moment2", 0.0, False))

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1.0e-8, momentum_decay=0.004,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        _betas(self, beta1, beta2, epsilon)
        self._momentum_decay = check_float_arg(momentum_decay, "momentum_decay", low=0.0)

    def _attrs(self, param):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                "momentum_decay": self._momentum_decay}


class RAdam(TableOptimizer):
    """Rectified Adam: plain bias-corrected momentum while the variance estimate is unreliable
    (``rho_t <= 5``), the rectified Adam step afterwards."""

    type = "radam"
    _table = (("Beta1Pow", "beta1_pow", 1.0, True), ("Beta2Pow", "beta2_pow", 1.0, True), ("Rho", "rho", 1.0, True),
              ("Moment1", "moment1", 0.0, False), ("Moment2", "moment2", 0.0, False))

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1.0e-8, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(require(learning_rate, "learning_rate"), parameters, weight_decay, grad_clip, name)
        _betas(self, beta1, beta2, epsilon)

    def _attrs(self, param):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}


__all__ = ["AdamW", "Lamb", "NAdam", "RAdam"]
