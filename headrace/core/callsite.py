"""The user's line that built an op: the first stack frame outside the ``headrace`` package."""
from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_inside_cache: dict[str, bool] = {}


def _inside(filename: str) -> bool:
    inside = _inside_cache.get(filename)
    if inside is None:
        inside = os.path.abspath(filename).startswith(_PACKAGE_DIR)
        _inside_cache[filename] = inside
    return inside


def user_site(skip: int = 0):
    """``(file name, line number)`` of the nearest caller outside headrace (None if none), looking
    from ``skip`` frames above the caller (frames the caller knows are inside headrace): the raw
    form an eager node keeps; ``text`` formats it only when a message needs it.
    Frames are told apart by file name (a string caches its hash; a code object hashes its
    bytecode and constants on every look-up, ~2 us for a real function)."""
    frame = sys._getframe(1 + skip)
    get = _inside_cache.get
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = get(filename)
        if inside is None:
            inside = _inside(filename)
        if not inside:
            return (filename, frame.f_lineno)
        frame = frame.f_back
    return None


def text(site) -> str:
    """``"file.py:42"`` for a ``user_site`` result (a string is already text; None is
    ``"<unknown>"``)."""
    if type(site) is tuple:
        return f"{site[0]}:{site[1]}"
    return "<unknown>" if site is None else site


def user_callsite(skip: int = 0) -> str:
    """``"file.py:42"`` for the nearest caller outside headrace (``"<unknown>"`` if none), looking
    from ``skip`` frames above the caller (see ``user_site``)."""
    return text(user_site(1 + skip))


def short(callsite: str) -> str:
    """A callsite (text or a ``user_site`` tuple) with the directory trimmed relative to the
    working directory when possible."""
    if type(callsite) is tuple:
        callsite = text(callsite)
    path, _, line = callsite.rpartition(":")
    if not path:
        return callsite
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    if rel.startswith(".." + os.sep + ".."):
        rel = path
    return f"{rel}:{line}"
