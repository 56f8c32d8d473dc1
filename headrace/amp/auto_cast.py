"""``auto_cast`` and ``decorate`` on the CPU: accepted, checked, no effect (see ``amp/__init__``)."""
from __future__ import annotations

import contextlib
import warnings

_LEVELS = ("O0", "OD", "O1", "O2")
_DTYPES = ("float16", "bfloat16")
NO_EFFECT = ("{what} can only be enabled on CUDAPlace, XPUPlace, and CustomPlace, current place is Place(cpu), "
             "so it makes no effect.")


def _check(level, dtype, levels=_LEVELS):
    if level not in levels:
        raise ValueError(f"level should be one of {', '.join(levels)}, got {level!r}")
    if dtype not in _DTYPES:
        raise ValueError(f"If enable amp, dtype should be 'float16' or 'bfloat16', got {dtype!r}")


def _check_lists(white, black):
    for name, value in (("custom_white_list", white), ("custom_black_list", black)):
        if value is not None and not isinstance(value, (list, tuple, set)):
            raise TypeError(f"auto_cast: {name} must be a list/tuple/set of op names, got {type(value).__name__}")
    overlap = set(white or ()) & set(black or ())
    if overlap:
        raise ValueError(f"auto_cast: op(s) {sorted(overlap)} are in both custom_white_list and custom_black_list")


@contextlib.contextmanager
def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
              use_promote=True):
    """Mixed-precision context: on the CPU (the only place here) it warns and computes in float32,
    as the reference's CPU build does."""
    _check(level, dtype)
    _check_lists(custom_white_list, custom_black_list)
    if enable and level != "O0":
        warnings.warn(NO_EFFECT.format(what="amp_guard"), stacklevel=3)
    yield


amp_guard = auto_cast


def decorate(models, optimizers=None, level="O1", dtype="float16", master_weight=None, save_dtype=None,
             master_grad=False, excluded_layers=None):
    """Pure-float16 preparation of models/optimizers (level O2); on the CPU they are returned
    unchanged (float32), as the reference's CPU build does."""
    _check(level, dtype, ("O1", "O2"))
    if save_dtype is not None and save_dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"save_dtype can only be float16, bfloat16, float32 or float64, got {save_dtype!r}")
    return models if optimizers is None else (models, optimizers)


def is_float16_supported(device=None) -> bool:
    """False: no float16 compute on this CPU-only build."""
    return False


def is_bfloat16_supported(device=None) -> bool:
    """False: no bfloat16 compute on this CPU-only build."""
    return False
