"""Ctrl-C during ``Executor.run``: never in the middle of an op that updates persistable state.

An op that writes a persistable variable (a parameter update, optimizer state, batch-norm
running statistics) updates it in place with several NumPy calls; a ``KeyboardInterrupt``
between two of them would leave the variable half-written.  While a plan with such ops runs in
the main thread, ``deferring()`` installs a SIGINT handler that raises ``KeyboardInterrupt`` at
once, except inside a ``critical()`` section (one such op's kernel): there it only notes the
interrupt, and leaving the section raises it.  So an interrupted run has applied the updates of
the ops that finished (each whole) and none of the later ones.

Only the default handler is replaced (a handler the user installed is left alone), and only for
the duration of the run; worker threads of a data-parallel run never receive signals.
"""
from __future__ import annotations

import contextlib
import signal
import threading

_state = {"critical": 0, "pending": False}
_MAIN = threading.main_thread()


def _handler(signum, frame):
    if _state["critical"]:
        _state["pending"] = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def deferring():
    """Install the deferring SIGINT handler for the block (main thread, default handler only)."""
    if threading.current_thread() is not _MAIN or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if _state["pending"]:   # noted in a critical section that then failed
            _state["pending"] = False
            raise KeyboardInterrupt


@contextlib.contextmanager
def critical():
    """A block a Ctrl-C does not interrupt (it arrives when the block ends)."""
    if threading.current_thread() is not _MAIN:
        yield
        return
    _state["critical"] += 1
    try:
        yield
    finally:
        _state["critical"] -= 1
        if _state["pending"] and not _state["critical"]:
            _state["pending"] = False
            raise KeyboardInterrupt
