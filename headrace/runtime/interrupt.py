"""Ctrl-C during ``Executor.run``: never in the middle of an op that updates persistable state.

An op that writes a persistable variable (a parameter update, optimizer state, batch-norm
running statistics) updates it in place with several NumPy calls; a ``KeyboardInterrupt``
between two of them would leave the variable half-written.  While a plan with such ops runs in
the main thread, ``install()`` puts in a SIGINT handler that raises ``KeyboardInterrupt`` at once,
except inside a critical section (one such op's kernel, between ``enter()`` and ``leave()``):
there it only notes the interrupt, and ``leave()`` raises it.  So an interrupted run has applied
the updates of the ops that finished (each whole) and none of the later ones.

Only the default handler is replaced (a handler the user installed is left alone), and only for
the duration of the run (``restore()``); worker threads of a data-parallel run never receive
signals, so their sections cost nothing.
"""
from __future__ import annotations

import signal
import threading

try:   # the C module under ``signal``: its wrappers' enum conversions cost ~10 µs per call
    import _signal as _sig
except ImportError:  # pragma: no cover - other Python implementations
    _sig = signal

_SIGINT = int(signal.SIGINT)
_DEFAULT = signal.default_int_handler
_MAIN = threading.main_thread().ident
_state = {"critical": 0, "pending": False}


def _handler(signum, frame):
    if _state["critical"]:
        _state["pending"] = True
        return
    raise KeyboardInterrupt


def install() -> bool:
    """Install the deferring handler if this is the main thread and SIGINT has the default
    handler; whether it was installed (then ``restore()`` must follow)."""
    if threading.get_ident() != _MAIN or _sig.getsignal(_SIGINT) is not _DEFAULT:
        return False
    _sig.signal(_SIGINT, _handler)
    return True


def restore() -> None:
    """Put the default handler back; raise an interrupt still pending (noted in a critical
    section that then failed)."""
    _sig.signal(_SIGINT, _DEFAULT)
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


def enter() -> bool:
    """Start a critical section (main thread only; returns whether one was started)."""
    if threading.get_ident() != _MAIN:
        return False
    _state["critical"] += 1
    return True


def leave() -> None:
    """End a critical section; raise the interrupt that arrived inside it."""
    _state["critical"] -= 1
    if _state["pending"] and not _state["critical"]:
        _state["pending"] = False
        raise KeyboardInterrupt
