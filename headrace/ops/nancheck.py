"""``FLAGS_check_nan_inf``: the check of an op's outputs for NaN and Inf (see core/flags.py).

The step runner (``step.py``) calls ``check`` after a kernel when the flag was on as the step was
made: a plan built while the flag is off has no check at all (the executor's fast path is
unchanged), and turning the flag on makes new plans.  The error names the op, the output (its
variable in static mode), the user's line that built the op, and whether the op's inputs were
already non-finite (then the NaN came from upstream: a feed, a parameter, an earlier op).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.errors import NonFiniteError, NonFiniteWarning, where


def _bad(value) -> bool:
    """Whether a floating-point array holds a NaN or an Inf (``isfinite().all()``: measured faster
    than a sum or min/max from 16 to 262,144 elements)."""
    return type(value) is np.ndarray and value.dtype.kind in "fc" and not np.isfinite(value).all()


def _count(value) -> str:
    nan = int(np.isnan(value).sum())
    inf = int(np.isinf(value).sum())
    return f"{nan} NaN and {inf} Inf of {value.size} values"


def _label(slot, name) -> str:
    return f"`{slot}` ({name})" if isinstance(name, str) and not name.startswith(f"{slot}:") else f"`{slot}`"


def _items(spec, values, slot):
    """``(label, array)`` of a slot's values, named when the step knows the names."""
    arrays = values if isinstance(values, (list, tuple)) else [values]
    names = spec if spec is not None else [None] * len(arrays)
    return [(_label(slot, name) if name is not None else f"`{slot}`", arr) for name, arr in zip(names, arrays)]


def _slots(step_slots, values: dict):
    if step_slots is not None:
        for slot, names, _ in step_slots:
            if slot in values:
                yield from _items(names, values[slot], slot)
    else:
        for slot, value in values.items():
            yield from _items(None, value, slot)


def check(step, ins, outs, level) -> None:
    """Raise (level 0) or warn (level 1) if an output of ``step`` holds a NaN or an Inf."""
    for value in outs.values():
        if type(value) is list:
            if any(_bad(v) for v in value):
                break
        elif _bad(value):
            break
    else:
        return
    _report(step, ins, outs, level)


def _report(step, ins, outs, level) -> None:
    for label, value in _slots(step.outs, outs):
        if not _bad(value):
            continue
        bad_inputs = [f"{in_label} has {_count(arr)}" for in_label, arr in _slots(step.ins, ins) if _bad(arr)]
        origin = (f"its inputs were already non-finite: {'; '.join(bad_inputs)}" if bad_inputs
                  else "its inputs were all finite (this op made it)")
        op = where(step.op_type, step.site())
        if step.note:
            op += f" ({step.note})"
        message = f"{op}: output {label} has {_count(value)}; {origin}"
        if level == 0:
            error = NonFiniteError(f"FLAGS_check_nan_inf: {message}")
            error.headrace_op = (step.op_type, step.site())
            raise error
        warnings.warn(NonFiniteWarning(f"FLAGS_check_nan_inf: {message}"), stacklevel=3)
