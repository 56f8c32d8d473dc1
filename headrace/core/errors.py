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
    """A kernel failed at run time; the message names the op and where it was built.

    An exception raised inside a kernel reaches the user as ``wrap_kernel_error``'s result: an
    instance of ``KernelError`` *and* of the original exception's type (an ``IndexError`` from a
    kernel is still caught by ``except IndexError``), with the original as ``__cause__`` and the
    op as the ``headrace_op`` attribute (``(op type, callsite)``).
    """

    headrace_op = None


_WRAPPERS: dict = {}


def _wrapper_class(cls):
    """``KernelError`` combined with ``cls`` (cached); plain ``KernelError`` if they cannot combine."""
    if issubclass(cls, KernelError):
        return cls
    wrapper = _WRAPPERS.get(cls)
    if wrapper is None:
        try:
            wrapper = type(f"KernelError[{cls.__name__}]", (KernelError, cls),
                           {"__module__": __name__, "__str__": lambda self: str(self.args[0]) if self.args else "",
                            "__reduce__": lambda self: (_rebuild_wrapped, (cls, self.args[0], _state(self)))})
        except TypeError:   # e.g. OSError's instance layout does not combine with RuntimeError's
            wrapper = KernelError
        _WRAPPERS[cls] = wrapper
    return wrapper


def _rebuild_wrapped(cls, message, state):
    exc = _make(_wrapper_class(cls), message)
    _set_state(exc, state)
    return exc


def _make(cls, message):
    try:
        return cls(message)
    except TypeError:     # an exception type whose constructor wants other arguments
        return KernelError(message)


def _state(exc) -> dict:
    """An exception's attributes (an AxisError's ``axis``, a JSONDecodeError's ``pos``, ...): its
    ``__dict__`` and any ``__slots__`` its classes declare."""
    state = {}
    for cls in type(exc).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(exc, name):
                state[name] = getattr(exc, name)
    state.update(getattr(exc, "__dict__", {}))
    return state


def _set_state(exc, state) -> None:
    for name, value in state.items():
        try:
            setattr(exc, name, value)
        except (AttributeError, TypeError):
            pass


def is_wrapped(exc) -> bool:
    """Whether ``exc`` already names the op it came from (raised by ``wrap_kernel_error``)."""
    return getattr(exc, "headrace_op", None) is not None


def wrap_kernel_error(exc: BaseException, op_type: str, callsite, detail: str = "") -> BaseException:
    """The error to raise for ``exc`` escaping op ``op_type``'s kernel: ``exc`` itself if it
    already names its op, else a ``KernelError`` that is also of ``exc``'s type (see KernelError)."""
    if is_wrapped(exc):
        return exc
    message = f"{where(op_type, callsite)} failed while running: {type(exc).__name__}: {exc}"
    if detail:
        message += "\n" + detail
    wrapped = _make(_wrapper_class(type(exc)), message)
    if type(wrapped) is not KernelError:
        _set_state(wrapped, _state(exc))
    wrapped.headrace_op = (op_type, callsite)
    return wrapped


class ProgramError(HeadraceError, ValueError):
    """A Program (built, transformed or loaded from a description) breaks an invariant; the
    message names the block, the op or variable index and the field."""


class CheckpointError(HeadraceError, ValueError):
    """A saved file cannot be loaded: corrupt (checksum), truncated, of an unknown format, unsafe
    (a pickle that would run code), or its values do not fit the variables they restore."""


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


class NonFiniteError(HeadraceError, FloatingPointError):
    """``FLAGS_check_nan_inf``: an op produced a NaN or an Inf (the message names the op, the
    output, the line that built the op and whether its inputs were already non-finite)."""

    headrace_op = None


class NonFiniteWarning(RuntimeWarning):
    """``FLAGS_check_nan_inf`` at level 1: an op produced a NaN or an Inf (the run goes on)."""


class ArgTypeError(HeadraceError, TypeError):
    """A layer, functional or optimizer argument has the wrong type."""


def located(cls, message: str) -> BaseException:
    """``cls(message)`` naming the user's line that called the layer: ``... (at train.py:12)``
    (for argument checks made before any op exists to carry its callsite)."""
    from .callsite import user_callsite

    return cls(f"{message} (at {short(user_callsite())})")
