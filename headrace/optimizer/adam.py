"""Adam (Kingma & Ba) with the bias correction folded into the step size, as the reference does."""
from __future__ import annotations

from .optimizer import Optimizer, check_float_arg


class Adam(Optimizer):
    """Adam with per-parameter ``moment1``/``moment2`` (zeros) and ``beta1_pow_acc``/
    ``beta2_pow_acc`` (starting at beta1, beta2) accumulators; beta1, beta2 in [0, 1),
    epsilon >= 0."""

    type = "adam"
    _moment1 = "moment1"
    _moment2 = "moment2"
    _beta1_pow = "beta1_pow_acc"
    _beta2_pow = "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1 = check_float_arg(beta1, "beta1", low=0.0, high=1.0, high_open=True)
        self._beta2 = check_float_arg(beta2, "beta2", low=0.0, high=1.0, high_open=True)
        self._epsilon = check_float_arg(epsilon, "epsilon", low=0.0)
        # lazy_mode only changes updates of sparse (row-subset) gradients; headrace's gradients
        # are dense, for which lazy and non-lazy Adam are the same update.
        self._lazy_mode = bool(lazy_mode)

    def _create_accumulators(self, params) -> None:
        for p in params:
            self._add_accumulator(self._moment1, p)
            self._add_accumulator(self._moment2, p)
            self._add_accumulator(self._beta1_pow, p, fill_value=self._beta1, shape=[1])
            self._add_accumulator(self._beta2_pow, p, fill_value=self._beta2, shape=[1])

    def _append_optimize_op(self, param, grad):
        acc = {slot: self._get_accumulator(name, param) for slot, name in (
            ("Moment1", self._moment1), ("Moment2", self._moment2),
            ("Beta1Pow", self._beta1_pow), ("Beta2Pow", self._beta2_pow))}
        return self._update_op(
            "adam",
            {"Param": param, "Grad": grad, "LearningRate": self._param_learning_rate(param), **acc},
            {"ParamOut": param, **{f"{slot}Out": var for slot, var in acc.items()}},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
             "lazy_mode": self._lazy_mode})
