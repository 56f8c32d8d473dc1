"""Typed errors, and the one message builder that names the op, the slot and the user's line.

A message reads like::

    op `elementwise_add` (built at train.py:42), input `Y`: expected shape broadcastable to
    [-1, 10] with axis=-1, got [3]
"""
from __future__ import annotations

from .callsite import short


class HeadraceError(Exception):
    """Base class of headrace's own errors."""


class ShapeError(HeadraceError, ValueError):
    """A shape does not fit what an op or a feed expects."""


class DTypeError(HeadraceError, TypeError):
    """A dtype does not fit what an op or a feed expects."""


class SlotError(HeadraceError, ValueError):
    """An op is given unknown slots, misses a required one, or gets the wrong number of variables."""


class AttrError(HeadraceError, ValueError):
    """An op attribute is unknown, missing or has an invalid value."""


class FeedError(HeadraceError, ValueError):
    """A feed names an unknown variable or gives a value of the wrong shape or dtype."""


class FetchError(HeadraceError, ValueError):
    """A fetch target is not computed by the program being run."""


class UninitializedError(HeadraceError, RuntimeError):
    """A variable is read before anything wrote it (e.g. startup program not run)."""


class KernelError(HeadraceError, RuntimeError):
    """A kernel failed at run time; the message names the op and where it was built."""


class DeviceError(HeadraceError, RuntimeError):
    """The requested device is not available in this build."""


def where(op_type: str, callsite: str | None) -> str:
    site = short(callsite) if callsite else "<unknown>"
    return f"op `{op_type}` (built at {site})"


def op_message(op_type: str, callsite: str | None, what: str, expected: str, got: str) -> str:
    """``op `T` (built at f.py:3), <what>: expected <expected>, got <got>``."""
    return f"{where(op_type, callsite)}, {what}: expected {expected}, got {got}"


def fmt_shape(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ", ".join(str(d) for d in shape) + "]"
