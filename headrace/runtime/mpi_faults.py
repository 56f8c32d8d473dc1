"""What a rank does when it fails, so the job ends with a message instead of hanging.

``install(world)`` replaces ``sys.excepthook``: an exception nobody catches (a ``KeyboardInterrupt``
too) prints ``headrace.distributed: rank R of N failed: <traceback>``, marks the rank failed in
the shared control block (peers waiting in a collective then raise ``PeerFailedError`` naming R)
and calls ``MPI_Abort``, which makes the launcher end every rank.  A rank that only stops because
a peer failed (``PeerFailedError``) prints its message and aborts too, without marking itself
failed (so the others keep naming the rank that failed first).
"""
from __future__ import annotations

import sys
import traceback

from .mpi_world import PeerFailedError

_previous_hook = None


def install(world) -> None:
    global _previous_hook
    if _previous_hook is not None:
        return
    _previous_hook = sys.excepthook

    def hook(kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        if isinstance(value, PeerFailedError):
            world.report(f"headrace.distributed: rank {world.rank} of {world.size} stops: {value}")
            world.abort()   # never returns
            return
        what = "was interrupted (Ctrl-C)" if issubclass(kind, KeyboardInterrupt) else "failed"
        world.fail(f"headrace.distributed: rank {world.rank} of {world.size} {what}; ending every rank.\n{text}")

    sys.excepthook = hook
