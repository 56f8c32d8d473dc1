"""Global flags (``paddle.set_flags`` / ``paddle.get_flags``; ``FLAGS_*`` environment variables).

- ``FLAGS_check_nan_inf`` (bool, default False): check every op's floating-point outputs for NaN
  and Inf, in static and eager mode (``ops/nancheck.py``).
- ``FLAGS_check_nan_inf_level`` (int, default 0): what a NaN/Inf does when the check is on.
  0: raise ``NonFiniteError`` at the first op output holding one; 1: warn (``NonFiniteWarning``,
  once per op output and run) and go on.  The reference's levels 2 and 3 (print statistics of
  every tensor) are not supported and refused.
- ``FLAGS_paddle_num_threads`` (int, 1 to 256): threads a large element-wise or row-wise kernel may
  split its work over (``ops/parallel.py``).  Default: the BLAS/OpenMP thread setting
  (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``), else the CPU count, at
  most 8 (the reference's default is 1; it uses the flag for its math library's threads).
- ``FLAGS_executor_buffer_reuse`` (bool, default True): a Program run without a buffer plan of
  its own (no ``enable_inplace`` / ``memory_optimize`` passes) gets the plan those passes would
  make, computed by the executor per (program version, feeds, fetches) as a side table, so the
  plain ``Executor.run`` reuses dying buffers (same results, bit for bit).  False: such programs
  run with fresh buffers for every output (what headrace did before; the reference has no such
  flag: its executor always frees dead tensors and applies its inplace pass by default).
- ``FLAGS_cpu_memory_keep_mb`` (int, 0 to 1024, default 64): freed memory the C library's main
  heap keeps for the next arrays instead of returning it to the system, so a step's temporaries
  do not page-fault fresh memory every step (``core/allocator.py``: glibc's ``mallopt``; other C
  libraries, and a user's own ``MALLOC_*`` settings, are left alone).  0 in the environment leaves
  the allocator untouched.  headrace's own flag (the reference keeps freed CPU memory in its own
  allocator).

The environment is read once, at import; ``set_flags`` changes a flag for the whole process.
"""
from __future__ import annotations

import os

from . import allocator

_LEVELS = (0, 1)


def _parse_bool(name, value) -> bool:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"{name}: expected a boolean (1/0, true/false), got {value!r}")
    if isinstance(value, (bool, int)) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name}: expected a boolean, got {value!r}")


def _parse_level(name, value) -> int:
    try:
        level = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an integer level, got {value!r}") from None
    if isinstance(value, float) and value != level or level not in _LEVELS:
        raise ValueError(f"{name}: level {value!r} is not supported; 0 raises an error at the first "
                         "NaN/Inf, 1 only warns (the reference's levels 2 and 3, which print every "
                         "tensor's statistics, are not implemented)")
    return level


def _parse_threads(name, value) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if isinstance(value, (bool, float)) or not 1 <= count <= _MAX_THREAD_FLAG:
        raise ValueError(f"{name}: expected a thread count (an integer from 1 to {_MAX_THREAD_FLAG}), "
                         f"got {value!r}")
    return count


def _parse_keep_mb(name, value) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = -1
    if isinstance(value, (bool, float)) or not 0 <= count <= _MAX_KEEP_MB:
        raise ValueError(f"{name}: expected a size in MiB (an integer from 0 to {_MAX_KEEP_MB}), got {value!r}")
    return count


_MAX_KEEP_MB = 1024
_MAX_THREADS = 8            # the default's cap
_MAX_THREAD_FLAG = 256      # the flag's: each thread is a pool worker with its own stack
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def default_num_threads() -> int:
    """The first of OMP/OpenBLAS/MKL_NUM_THREADS that is a positive integer, else the CPU count;
    at most 8."""
    for variable in _THREAD_VARIABLES:
        text = os.environ.get(variable, "").split(",")[0].strip()
        if text.isdigit() and int(text) >= 1:
            return min(int(text), _MAX_THREADS)
    return max(1, min(os.cpu_count() or 1, _MAX_THREADS))


_PARSERS = {"FLAGS_check_nan_inf": _parse_bool, "FLAGS_check_nan_inf_level": _parse_level,
            "FLAGS_paddle_num_threads": _parse_threads, "FLAGS_executor_buffer_reuse": _parse_bool,
            "FLAGS_cpu_memory_keep_mb": _parse_keep_mb}
_values = {"FLAGS_check_nan_inf": False, "FLAGS_check_nan_inf_level": 0,
           "FLAGS_paddle_num_threads": default_num_threads(), "FLAGS_executor_buffer_reuse": True,
           "FLAGS_cpu_memory_keep_mb": 64}
_nan_inf = None   # the level when the check is on, else None (read on every op: kept in one global)


def _update() -> None:
    global _nan_inf
    _nan_inf = _values["FLAGS_check_nan_inf_level"] if _values["FLAGS_check_nan_inf"] else None


def num_threads() -> int:
    """``FLAGS_paddle_num_threads``: the threads one kernel may use (``ops/parallel.py``)."""
    return _values["FLAGS_paddle_num_threads"]


def buffer_reuse() -> bool:
    """Whether the executor plans buffer reuse for a program without a buffer plan."""
    return _values["FLAGS_executor_buffer_reuse"]


def nan_inf_level():
    """The NaN/Inf check level when the check is on, else None."""
    return _nan_inf


def set_flags(flags: dict) -> None:
    """Set global flags: ``set_flags({"FLAGS_check_nan_inf": True})``."""
    if not isinstance(flags, dict):
        raise TypeError(f"set_flags expects a dict of flag name -> value, got {type(flags).__name__}")
    parsed = {}
    for name, value in flags.items():
        parser = _PARSERS.get(name)
        if parser is None:
            raise ValueError(f"set_flags: unknown flag {name!r}; known flags: {sorted(_PARSERS)}")
        parsed[name] = parser(name, value)
    _values.update(parsed)
    _update()
    if "FLAGS_cpu_memory_keep_mb" in parsed:
        allocator.apply(parsed["FLAGS_cpu_memory_keep_mb"])


def get_flags(flags) -> dict:
    """``{name: value}`` of the flags named (a name or a list of names)."""
    names = [flags] if isinstance(flags, str) else flags
    if not isinstance(names, (list, tuple)):
        raise TypeError(f"get_flags expects a flag name or a list of names, got {type(flags).__name__}")
    result = {}
    for name in names:
        if name not in _values:
            raise ValueError(f"get_flags: unknown flag {name!r}; known flags: {sorted(_PARSERS)}")
        result[name] = _values[name]
    return result


def _from_environment() -> None:
    found = {name: os.environ[name] for name in _PARSERS if name in os.environ}
    if found:
        set_flags(found)
    if "FLAGS_cpu_memory_keep_mb" not in found:
        allocator.apply(_values["FLAGS_cpu_memory_keep_mb"])


_from_environment()
