"""Process-wide building context: default programs, ``program_guard``, ``name_scope``, mode.

Mode: headrace starts in eager (dygraph) mode, as Paddle 2.x does; ``enable_static()`` switches
to static mode (programs are built, then run by an Executor), ``disable_static()`` back.  Importing
``headrace.fluid`` (the 1.x API, static by default) calls ``prefer_static_default()``, which makes
static mode the default unless the user already chose a mode with ``enable_static()`` /
``disable_static()``.  Explicit calls and ``static_mode_guard`` always win.
"""
from __future__ import annotations

import contextlib

from .program import Program

_main_program = Program()
_startup_program = Program()
_static_mode = False
_mode_chosen = False   # set by an explicit enable_static()/disable_static()
_name_scopes: list[str] = []


def default_main_program() -> Program:
    """The program that layers append ops to (unless inside ``program_guard``)."""
    return _main_program


def default_startup_program() -> Program:
    """The program that receives parameter initializers."""
    return _startup_program


def switch_main_program(program: Program) -> Program:
    global _main_program
    old, _main_program = _main_program, program
    return old


def switch_startup_program(program: Program) -> Program:
    global _startup_program
    old, _startup_program = _startup_program, program
    return old


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Program | None = None):
    """Build into ``main_program`` (and put initializers into ``startup_program``) in this block."""
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard: main_program must be a Program, got {type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"program_guard: startup_program must be a Program, got {type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)


@contextlib.contextmanager
def name_scope(prefix: str | None = None):
    """Ops built inside carry ``op_namescope`` = "/outer/inner/" (for graph dumps and debugging)."""
    _name_scopes.append(prefix or "")
    try:
        yield
    finally:
        _name_scopes.pop()


_devices: list[str] = []


@contextlib.contextmanager
def device_scope(device: str):
    """Ops built inside carry ``op_device`` = ``device`` (``static.device_guard``)."""
    _devices.append(device)
    try:
        yield
    finally:
        _devices.pop()


def current_device() -> str:
    return _devices[-1] if _devices else ""


def current_name_scope() -> str:
    if not _name_scopes:
        return "/"
    return "/" + "/".join(s for s in _name_scopes if s) + "/"


def in_static_mode() -> bool:
    return _static_mode


def in_dynamic_mode() -> bool:
    return not _static_mode


def enable_static() -> None:
    global _static_mode, _mode_chosen
    _static_mode = _mode_chosen = True


def disable_static(place=None) -> None:
    global _static_mode, _mode_chosen
    _static_mode, _mode_chosen = False, True


def prefer_static_default() -> None:
    """Static mode becomes the default (importing the fluid 1.x API) unless a mode was chosen."""
    global _static_mode
    if not _mode_chosen:
        _static_mode = True


@contextlib.contextmanager
def static_mode_guard(static: bool):
    """Temporarily set the mode (used by ``fluid.dygraph.guard`` and tests)."""
    global _static_mode
    old, _static_mode = _static_mode, static
    try:
        yield
    finally:
        _static_mode = old
