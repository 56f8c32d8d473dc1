"""Feed checks beyond shape and dtype: Python values that do not fit the variable's dtype,
ragged lists, and feeds that disagree on the batch size."""
from __future__ import annotations

import numpy as np

from ..core.errors import FeedError


def from_python(var, value) -> np.ndarray:
    """A feed given as Python numbers or nested lists, converted to ``var``'s dtype; values the
    dtype cannot hold (``3e9`` into int32, ``2**63`` into int64, ``1e40`` into float32) are refused
    instead of wrapping around or becoming inf."""
    want = var.dtype.numpy
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise FeedError(f"feed {var.name!r}: a ragged nested list (sublists of different lengths) "
                        f"cannot be a {var.dtype} tensor ({exc})") from None
    if raw.dtype.kind == "f" and want.kind in "iub":
        raise FeedError(f"feed {var.name!r}: expected dtype {var.dtype}, got floating-point values")
    if raw.dtype.kind not in "biuf":
        hint = " (a number too large for any integer dtype?)" if raw.dtype.kind == "O" else ""
        raise FeedError(f"feed {var.name!r}: expected numbers of dtype {var.dtype}, got {raw.dtype}{hint}")
    if want.kind in "iu" and raw.dtype.kind in "iu" and raw.size:
        info = np.iinfo(want)
        low, high = int(raw.min()), int(raw.max())
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise FeedError(f"feed {var.name!r}: value {bad} is out of the range of {var.dtype} "
                            f"[{info.min}, {info.max}]")
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is reported below
        arr = raw.astype(want)
    if want.kind == "f" and raw.size:
        overflow = np.isinf(arr) & np.isfinite(raw)
        if overflow.any():
            bad = raw[overflow].flat[0]
            raise FeedError(f"feed {var.name!r}: value {bad!r} overflows {var.dtype} (largest "
                            f"{float(np.finfo(want).max):g}); feed a float64 variable or scale the data")
    return arr


def batch_mismatch(program, arrays: dict, failure: BaseException):
    """A FeedError naming two fed data variables whose batch sizes (dim 0, declared -1 for both)
    differ, or None.  Asked after an op failed (``failure``, quoted in the message): differing
    batch sizes can be intended (e.g. a variable of indices), so they are no error by themselves."""
    block = program.global_block()
    seen = []
    for name, arr in arrays.items():
        var = block._find_var_recursive(name)
        if var is None or var.persistable or not var.shape or var.shape[0] != -1 or np.ndim(arr) == 0:
            continue
        batch = np.shape(arr)[0]
        for other, other_batch in seen:
            if other_batch != batch:
                error = FeedError(f"feeds {other!r} (batch {other_batch}) and {name!r} (batch {batch}) "
                                  "have different batch sizes (dim 0, declared -1 for both), and the run "
                                  f"failed: {failure}")
                error.headrace_op = getattr(failure, "headrace_op", None)
                return error
        seen.append((name, batch))
    return None
