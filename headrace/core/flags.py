"""Global flags (``paddle.set_flags`` / ``paddle.get_flags``; ``FLAGS_*`` environment variables).

- ``FLAGS_check_nan_inf`` (bool, default False): check every op's floating-point outputs for NaN
  and Inf, in static and eager mode (``ops/nancheck.py``).
- ``FLAGS_check_nan_inf_level`` (int, default 0): what a NaN/Inf does when the check is on.
  0: raise ``NonFiniteError`` at the first op output holding one; 1: warn (``NonFiniteWarning``,
  once per op output and run) and go on.  The reference's levels 2 and 3 (print statistics of
  every tensor) are not supported and refused.

The environment is read once, at import; ``set_flags`` changes a flag for the whole process.
"""
from __future__ import annotations

import os

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


_PARSERS = {"FLAGS_check_nan_inf": _parse_bool, "FLAGS_check_nan_inf_level": _parse_level}
_values = {"FLAGS_check_nan_inf": False, "FLAGS_check_nan_inf_level": 0}
_nan_inf = None   # the level when the check is on, else None (read on every op: kept in one global)


def _update() -> None:
    global _nan_inf
    _nan_inf = _values["FLAGS_check_nan_inf_level"] if _values["FLAGS_check_nan_inf"] else None


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


_from_environment()
