"""An optimizer's state in static mode: its accumulators' values in the global scope.

``Optimizer.state_dict()`` in static mode returns ``{accumulator name: ndarray}`` (read from the
global scope: the values after the runs so far) plus ``"LR_Scheduler"`` with a schedule;
``set_state_dict`` checks every value against its accumulator variable (shape, dtype) and then
stores them all (nothing stored when one does not fit).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import convert_dtype
from ..core.errors import DTypeError, ShapeError
from ..runtime.scope import global_scope


def accumulators(optimizer) -> dict:
    return {var.name: var for acc in optimizer._accumulators.values() for var in acc.values()}


def static_state_dict(optimizer) -> dict:
    scope = global_scope()
    state = {}
    for name in accumulators(optimizer):
        value = scope._get_array(name)
        if value is None:
            raise ValueError(f"{type(optimizer).__name__}.state_dict(): accumulator {name!r} has no value in the "
                             "global scope; run the startup program first")
        state[name] = np.array(value, copy=True)
    return state


def set_static_state_dict(optimizer, state: dict) -> None:
    """Store ``state``'s accumulator values (arrays or Tensors) into the global scope."""
    checked = []
    for name, var in accumulators(optimizer).items():
        if name not in state:
            raise KeyError(f"{type(optimizer).__name__}.set_state_dict: the state has no value for accumulator "
                           f"{name!r}; it holds {sorted(state)[:6]}")
        value = state[name]
        value = np.array(getattr(value, "_value", value), copy=True)
        if var.shape is not None and list(value.shape) != list(var.shape):
            raise ShapeError(f"set_state_dict: accumulator {name!r} has shape {list(var.shape)}, the value has "
                             f"shape {list(value.shape)}")
        if var.dtype is not None and convert_dtype(value.dtype) != var.dtype:
            raise DTypeError(f"set_state_dict: accumulator {name!r} has dtype {var.dtype}, the value has dtype "
                             f"{value.dtype}")
        checked.append((name, value))
    scope = global_scope()
    for name, value in checked:
        scope._set_array(name, value)
