"""``validate_loaded``: the check a Program built by ``Program.from_dict`` passes before use.

Contract
--------
Installed at import time as ``core.program_format``'s validator, so every ``from_dict`` (a
``.pdmodel`` file, ``static.deserialize_program``, an inference model) runs it.  ``core``
has already checked the description's shape (fields, value types, format version, block parents).
This raises ``ProgramError`` naming the block, the op index, the op type and the field, for:

1. an op type that is not registered;
2. an attribute the op does not declare, a required attribute that is missing, or a value whose
   type differs from the declared default's (a str where an int is declared, ...).  An optional
   attribute that is missing gets its default (a description written before the attribute
   existed still loads);
3. everything ``verify.check_program`` checks: slots and their arity, variables that do not exist
   (dangling names), shapes and dtypes re-inferred, the buffer plan;
4. an op reading a variable that a *later* op of the block writes, and nothing writes before it
   (and it is neither data nor persistable): the ops would depend on each other in a cycle.
   Variables no op writes at all are allowed (they are fed at run time).

Nothing is modified except the filled-in defaults.
"""
from __future__ import annotations

import copy

import numpy as np

from ..core.errors import HeadraceError, ProgramError
from ..core.program_format import set_program_validator
from ..core.roles import COMMON_ATTRS
from ..ops.registry import REQUIRED, has_op, lookup
from .verify import check_program


def validate_loaded(program) -> None:
    for block in program.blocks:
        for index, op in enumerate(block.ops):
            here = f"program description, block {block.idx} op {index} (`{op.type}`)"
            if not has_op(op.type):
                raise ProgramError(f"{here}: unknown op type `{op.type}`")
            _check_attrs(op, lookup(op.type), here)
    written = {name for block in program.blocks for op in block.ops for name in op.output_arg_names}
    fed = [name for block in program.blocks for name in block.vars if name not in written]
    try:
        check_program(program, feeds=fed)
    except ProgramError as exc:
        raise ProgramError(f"program description: {exc}") from exc
    except HeadraceError as exc:    # an infer rule's own error type (ShapeError, ...)
        raise ProgramError(f"program description: {exc}") from exc


def _check_attrs(op, opdef, here: str) -> None:
    declared = dict(COMMON_ATTRS)
    declared.update(opdef.attrs)
    for name, value in op.attrs.items():
        if name not in declared:
            known = ", ".join(sorted(opdef.attrs)) or "none"
            raise ProgramError(f"{here}, attribute `{name}`: not an attribute of this op (known: {known})")
        default = declared[name]
        if not _fits(default, value):
            raise ProgramError(f"{here}, attribute `{name}`: expected {_kind(default)}, "
                               f"got {type(value).__name__} {value!r:.60}")
    for name, default in opdef.attrs.items():
        if name in op.attrs:
            continue
        if default is REQUIRED:
            raise ProgramError(f"{here}, attribute `{name}`: missing, and the op requires it")
        op.attrs[name] = copy.deepcopy(default)


def _fits(default, value) -> bool:
    """Whether ``value`` has the type the default declares (no declared type: anything)."""
    if default is None or default is REQUIRED:
        return True
    if isinstance(default, bool):
        return isinstance(value, (bool, np.bool_))
    if isinstance(default, int):
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple, np.ndarray))
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def _kind(default) -> str:
    for kind, text in ((bool, "a bool"), (int, "an int"), (float, "a number"), (str, "a str"),
                       ((list, tuple), "a list"), (dict, "a dict")):
        if isinstance(default, kind):
            return text
    return type(default).__name__


set_program_validator(validate_loaded)
