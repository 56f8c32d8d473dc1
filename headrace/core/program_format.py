"""The Program file format: its version, and the structural check ``Program.from_dict`` runs.

A program description (``Program.to_dict()``, what ``.pdmodel`` files hold as JSON) carries
``"version": FORMAT_VERSION``.  ``check_spec`` checks the *shape* of a description before any
object is built from it: keys and value types of the program, each block, variable and op, block
indices and parents (a parent must come before its child, so the block tree has no cycle).  A
description from a newer, unknown version is refused with a message saying so.  Whether the ops are
known, their attributes fit the registry and every variable is defined before use is checked after
building by the validator that ``headrace.passes.verify`` installs (``set_program_validator``):
``core`` cannot import the op registry.

Every fault is a ``ProgramError`` naming the block, the op or variable index and the field.
"""
from __future__ import annotations

from . import dtypes
from .errors import ProgramError

FORMAT_VERSION = 1   # the format this build writes and the newest it reads

_validator = None    # installed by headrace.passes.verify: validator(program) -> None


def set_program_validator(validator) -> None:
    """Install the function that checks a program built by ``from_dict`` against the op registry."""
    global _validator
    _validator = validator


def program_validator():
    return _validator


def _fail(where: str, field: str, expected: str, got) -> ProgramError:
    text = repr(got)
    if len(text) > 80:
        text = text[:77] + "..."
    return ProgramError(f"program description, {where}, field `{field}`: expected {expected}, got {text}")


def _need(mapping: dict, key: str, kind, where: str, expected: str, optional=False):
    if key not in mapping:
        if optional:
            return None
        raise ProgramError(f"program description, {where}: field `{key}` is missing")
    value = mapping[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise _fail(where, key, expected, value)
    return value


def check_version(spec) -> int:
    if not isinstance(spec, dict):
        raise ProgramError(f"program description: expected a dict (Program.to_dict()), got {type(spec).__name__}")
    version = _need(spec, "version", int, "top level", "the format version (an int)")
    if version > FORMAT_VERSION:
        raise ProgramError(f"program description has format version {version}, written by a newer headrace; "
                           f"this one reads format versions up to {FORMAT_VERSION}: upgrade headrace to load it")
    if version < 1:
        raise _fail("top level", "version", f"a format version between 1 and {FORMAT_VERSION}", version)
    return version


def check_spec(spec) -> None:
    """Raise ``ProgramError`` unless ``spec`` is a well-shaped program description."""
    check_version(spec)
    _need(spec, "random_seed", int, "top level", "an int", optional=True)
    _need(spec, "strict_order", bool, "top level", "a bool", optional=True)
    blocks = _need(spec, "blocks", list, "top level", "a non-empty list of blocks")
    if not blocks:
        raise _fail("top level", "blocks", "a non-empty list of blocks", blocks)
    for position, bspec in enumerate(blocks):
        _check_block(position, bspec)


def _check_block(position: int, bspec) -> None:
    where = f"block {position}"
    if not isinstance(bspec, dict):
        raise ProgramError(f"program description, {where}: expected a dict, got {type(bspec).__name__}")
    idx = _need(bspec, "idx", int, where, f"the block's position {position}")
    if idx != position:
        raise _fail(where, "idx", f"the block's position {position}", idx)
    parent = _need(bspec, "parent_idx", int, where, "an int")
    if (position == 0 and parent != -1) or (position > 0 and not 0 <= parent < position):
        expected = "-1 (the global block has no parent)" if position == 0 else \
            f"an earlier block's index (0..{position - 1}; blocks nest without cycles)"
        raise _fail(where, "parent_idx", expected, parent)
    names = set()
    for i, vspec in enumerate(_need(bspec, "vars", list, where, "a list of variables")):
        name = _check_var(f"{where} variable {i}", vspec)
        if name in names:
            raise ProgramError(f"program description, {where} variable {i}: the name {name!r} is declared twice")
        names.add(name)
    for i, ospec in enumerate(_need(bspec, "ops", list, where, "a list of ops")):
        _check_op(f"{where} op {i}", ospec)


_VAR_FLAGS = ("persistable", "stop_gradient", "is_data", "need_check_feed")


def _check_var(where: str, vspec) -> str:
    if not isinstance(vspec, dict):
        raise ProgramError(f"program description, {where}: expected a dict, got {type(vspec).__name__}")
    name = _need(vspec, "name", str, where, "a non-empty str")
    if not name:
        raise _fail(where, "name", "a non-empty str", name)
    where = f"{where} ({name!r})"
    shape = vspec.get("shape")
    if shape is not None and not (isinstance(shape, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape)):
        raise _fail(where, "shape", "a list of ints >= -1 or null", shape)
    dtype = vspec.get("dtype")
    if dtype is not None:
        try:
            dtypes.convert_dtype(dtype)
        except (TypeError, ValueError, KeyError):
            raise _fail(where, "dtype", "a dtype name such as 'float32'", dtype) from None
    for flag in _VAR_FLAGS:
        _need(vspec, flag, bool, where, "a bool", optional=True)
    _need(vspec, "lod_level", int, where, "an int", optional=True)
    _need(vspec, "type", str, where, "a variable type name", optional=True)
    extra = set(vspec) - {"name", "shape", "dtype", "type", "lod_level", "parameter", *_VAR_FLAGS}
    if extra:
        raise ProgramError(f"program description, {where}: unknown fields {sorted(extra)}")
    pspec = vspec.get("parameter")
    if pspec is not None:
        if not isinstance(pspec, dict):
            raise _fail(where, "parameter", "a dict of parameter options", pspec)
        for key, kind, expected in (("trainable", bool, "a bool"), ("optimize_attr", dict, "a dict"),
                                    ("need_clip", bool, "a bool")):
            _need(pspec, key, kind, f"{where} parameter", expected)
        if pspec.get("regularizer") is not None:
            _need(pspec, "regularizer", dict, f"{where} parameter", "a regularizer's dict or null")
        if dtype is None:
            raise _fail(where, "dtype", "a parameter's dtype", dtype)
        if shape is None or any(d <= 0 for d in shape):
            raise _fail(where, "shape", "a parameter's shape: positive dims", shape)
    return name


_OP_FIELDS = {"type", "inputs", "outputs", "attrs", "callsite"}


def _check_op(where: str, ospec) -> None:
    if not isinstance(ospec, dict):
        raise ProgramError(f"program description, {where}: expected a dict, got {type(ospec).__name__}")
    op_type = _need(ospec, "type", str, where, "an op type name")
    where = f"{where} (`{op_type}`)"
    for field in ("inputs", "outputs"):
        slots = _need(ospec, field, dict, where, "a dict slot -> list of variable names")
        for slot, names in slots.items():
            if not (isinstance(names, list) and all(isinstance(n, str) and n for n in names)):
                raise _fail(where, f"{field}.{slot}", "a list of variable names", names)
    attrs = _need(ospec, "attrs", dict, where, "a dict of attributes")
    for key in attrs:
        if not isinstance(key, str):
            raise _fail(where, "attrs", "attribute names that are str", key)
    callsite = ospec.get("callsite")
    if callsite is not None and not isinstance(callsite, str):
        raise _fail(where, "callsite", "a 'file:line' str or null", callsite)
    extra = set(ospec) - _OP_FIELDS
    if extra:
        raise ProgramError(f"program description, {where}: unknown fields {sorted(extra)}")
