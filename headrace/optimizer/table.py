"""A base for optimizers whose update is one op over the parameter and a fixed table of
accumulators (Adagrad, RMSProp, Adadelta, Adamax, AdamW, Lamb, NAdam, RAdam).

A subclass lists ``_table``: ``(op slot, accumulator name, fill value, scalar)`` rows — the fill
value a number or the name of an attribute of the optimizer, ``scalar`` accumulators of shape
[1] (beta powers) — and defines ``_attrs(param)``, the update op's attributes for one parameter.
The op type is the class's ``type``.
"""
from __future__ import annotations

from .optimizer import Optimizer


def require(value, name: str):
    """The reference's check for hyper-parameters without a default: ``ValueError('... is not set')``."""
    if value is None:
        raise ValueError(f"{name} is not set.")
    return value


class TableOptimizer(Optimizer):
    """Base class; see the module docstring."""

    _table: tuple = ()

    def _fill(self, fill) -> float:
        return float(getattr(self, fill)) if isinstance(fill, str) else float(fill)

    def _create_accumulators(self, params) -> None:
        for p in params:
            for _, name, fill, scalar in self._table:
                self._add_accumulator(name, p, fill_value=self._fill(fill), shape=[1] if scalar else None)

    def _attrs(self, param) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must define _attrs(param)")

    def _append_optimize_op(self, param, grad):
        acc = {slot: self._get_accumulator(name, param) for slot, name, _, _ in self._table}
        return self._update_op(
            self.type,
            {"Param": param, "Grad": grad, "LearningRate": self._param_learning_rate(param), **acc},
            {"ParamOut": param, **{f"{slot}Out": var for slot, var in acc.items()}},
            self._attrs(param))
