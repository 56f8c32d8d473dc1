"""Weight decay added to a parameter's gradient before its update op (``paddle.regularizer``).

``L2Decay(coeff)``: ``grad + coeff * param`` (ops ``scale``, ``sum``); ``L1Decay(coeff)``:
``grad + coeff * sign(param)`` (``sign``, ``scale``, ``sum``).  A regularizer given to a parameter
through ``ParamAttr(regularizer=...)`` wins over the optimizer's; the ops are built with
``apply_op``, so the same code appends ops in static mode and computes in eager mode.
"""
from __future__ import annotations

import numbers

from ..core import variable as _variable
from ..ops.apply import apply_op_single
from ..core.errors import ArgTypeError, AttrError, located


class WeightDecayRegularizer:
    """Base class: ``regularizer(param, grad)`` returns the regularized gradient."""

    _kind = ""

    def __init__(self, coeff=0.0):
        if isinstance(coeff, bool) or not isinstance(coeff, numbers.Real):
            raise located(ArgTypeError, f"{type(self).__name__}: coeff must be a number, got {type(coeff).__name__}: {coeff!r}")
        if coeff < 0:
            raise located(AttrError, f"{type(self).__name__}: coeff must be >= 0, got {coeff}")
        self._coeff = float(coeff)

    @property
    def coeff(self) -> float:
        return self._coeff

    def _decay(self, param):
        raise NotImplementedError

    def __call__(self, param, grad):
        decay = self._decay(param)
        return apply_op_single("sum", {"X": [grad, decay]})

    def __repr__(self):
        return f"{type(self).__name__}(coeff={self._coeff})"

    def to_dict(self) -> dict:
        """JSON-safe description (``Program.to_dict`` stores a parameter's regularizer with it)."""
        return {"type": self._kind, "coeff": self._coeff}


class L2Decay(WeightDecayRegularizer):
    """``grad + coeff * param``."""

    _kind = "l2"

    def _decay(self, param):
        return apply_op_single("scale", {"X": param}, {"scale": self._coeff})


class L1Decay(WeightDecayRegularizer):
    """``grad + coeff * sign(param)``."""

    _kind = "l1"

    def _decay(self, param):
        sign = apply_op_single("sign", {"X": param})
        return apply_op_single("scale", {"X": sign}, {"scale": self._coeff})


class L2DecayRegularizer(L2Decay):
    """fluid 1.x name: ``L2DecayRegularizer(regularization_coeff=0.0)``."""

    def __init__(self, regularization_coeff=0.0):
        super().__init__(regularization_coeff)


class L1DecayRegularizer(L1Decay):
    """fluid 1.x name: ``L1DecayRegularizer(regularization_coeff=0.0)``."""

    def __init__(self, regularization_coeff=0.0):
        super().__init__(regularization_coeff)


def from_spec(spec: dict) -> WeightDecayRegularizer:
    kinds = {"l2": L2Decay, "l1": L1Decay}
    if spec.get("type") not in kinds:
        raise located(AttrError, f"unknown regularizer description {spec!r}")
    return kinds[spec["type"]](spec["coeff"])


_variable.regularizer_from_spec = from_spec


def check_regularizer(value, what: str):
    if value is not None and not isinstance(value, WeightDecayRegularizer):
        raise located(ArgTypeError, f"{what} must be an L2Decay/L1Decay regularizer (or None), got "
                        f"{type(value).__name__}: {value!r}")
    return value


def append_regularization(params_grads, regularization=None) -> list:
    """``[(param, regularized grad)]``: the parameter's own regularizer, else ``regularization``."""
    out = []
    for param, grad in params_grads:
        reg = getattr(param, "regularizer", None) or regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        out.append((param, reg(param, grad)))
    return out


__all__ = ["L1Decay", "L1DecayRegularizer", "L2Decay", "L2DecayRegularizer", "WeightDecayRegularizer"]
