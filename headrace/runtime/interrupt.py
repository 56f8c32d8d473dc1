"""Ctrl-C during ``Executor.run``: the update phase of a step is never interrupted.

Ops that write persistable variables (parameter updates, optimizer state, batch-norm running
statistics) update them in place with several NumPy calls; a ``KeyboardInterrupt`` between two
of them would leave a variable half-written, and one between two update ops would leave a step
half-applied.  While a plan with such ops runs in the main thread, ``install()`` puts in a SIGINT
handler that raises ``KeyboardInterrupt`` at once until the run reaches its first such op
(``begin()``, called by that op's step); from there on it only notes the interrupt, and
``restore()`` raises it when the run ends.  So an interrupted run either stopped before writing
any persistable variable or applied all of its updates.

Only the default handler is replaced (a handler the user installed is left alone), and only for
the duration of the run; signals reach only the main thread.  A data-parallel place thread that
begins its updates also holds the main thread's interrupt until place 0's run ends.
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
_state = {"updating": False, "pending": False}


def _handler(signum, frame):
    if _state["updating"]:
        _state["pending"] = True
        return
    raise KeyboardInterrupt


def install() -> bool:
    """Install the deferring handler if this is the main thread and SIGINT has the default
    handler; whether it was installed (then ``restore()`` must follow)."""
    if threading.get_ident() != _MAIN or _sig.getsignal(_SIGINT) is not _DEFAULT:
        return False
    _state["updating"] = _state["pending"] = False
    _sig.signal(_SIGINT, _handler)
    return True


def begin() -> None:
    """The run reached its first op writing persistable state: hold Ctrl-C until it ends."""
    _state["updating"] = True


def restore() -> None:
    """Put the default handler back; raise the interrupt held during the update phase."""
    _sig.signal(_SIGINT, _DEFAULT)
    _state["updating"] = False
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt
