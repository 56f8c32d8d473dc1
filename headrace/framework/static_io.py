"""Static-mode saving: ``static.save``/``load`` (``.pdparams``, ``.pdopt``, ``.pdmodel``),
``load_program_state``/``set_program_state`` and ``Program.state_dict``/``set_state_dict``.

A program's state is its persistable variables' values in a Scope (the global scope unless
given).  Parameters go to ``<prefix>.pdparams``, the other persistables (optimizer accumulators,
learning-rate variables) to ``<prefix>.pdopt`` together with, as JSON metadata, the state of the
LR schedules the program's optimizer registered and of the program's own random generator
(``Program.random_seed``) and, after a data-parallel run, of its place copies' generators, so a run
resumed from the files continues bit-identically.  The Program
itself goes to ``<prefix>.pdmodel``.  Every value loaded is checked against the variable it
restores (shape and dtype), before any is stored.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from ..core.errors import CheckpointError, DTypeError, ShapeError
from ..core.dtypes import convert_dtype
from ..core.program import Program
from ..core.variable import LOD_TENSOR, Parameter, Variable
from ..eager.tensor import Tensor
from ..runtime.scope import LoDTensor, Scope, global_scope
from . import container, io as fio

_log = logging.getLogger("headrace.static.io")


# --- which variables --------------------------------------------------------------------------
def persistables(program: Program) -> list:
    """The program's persistable tensor variables (each name once; data variables excluded)."""
    seen, out = set(), []
    for var in program.list_vars():
        if var.persistable and not var.is_data and var.type == LOD_TENSOR and var.name not in seen:
            seen.add(var.name)
            out.append(var)
    return out


def is_parameter(var) -> bool:
    return isinstance(var, Parameter)


def is_optimizer_state(var) -> bool:
    return var.persistable and not isinstance(var, Parameter)


# --- values -----------------------------------------------------------------------------------
def as_array(value, name: str) -> np.ndarray:
    if isinstance(value, Tensor):
        return value._value
    if isinstance(value, LoDTensor):
        return np.array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise TypeError(f"the value for {name!r} is a {type(value).__name__}; expected an ndarray, Tensor or LoDTensor")


def check_value(var: Variable, value: np.ndarray, source: str) -> None:
    """A value restoring ``var`` must have its shape (``-1`` dims match any size) and dtype."""
    shape = list(value.shape)
    if var.shape is not None and (len(shape) != len(var.shape)
                                  or any(d not in (-1, s) for d, s in zip(var.shape, shape))):
        raise ShapeError(f"{source}: variable {var.name!r} expects shape {list(var.shape)}, "
                         f"the loaded value has shape {shape}")
    if var.dtype is not None and convert_dtype(value.dtype) != var.dtype:
        raise DTypeError(f"{source}: variable {var.name!r} expects dtype {var.dtype}, "
                         f"the loaded value has dtype {value.dtype}")


def _owned(value: np.ndarray) -> np.ndarray:
    """Scope values are updated in place: they must be writable arrays of their own."""
    if value.flags.writeable and value.flags.owndata and value.flags.c_contiguous:
        return value
    return np.array(value, copy=True, order="C")


def store(scope: Scope, pairs: list, source: str) -> None:
    """Check every ``(var, value)`` first, then store them all (nothing stored if one fails)."""
    arrays = []
    for var, value in pairs:
        array = as_array(value, var.name)
        check_value(var, array, source)
        arrays.append((var.name, array))
    for name, array in arrays:
        scope._set_array(name, _owned(array))


# --- Program.state_dict / set_state_dict ------------------------------------------------------
def program_state_dict(program: Program, mode: str = "all", scope=None) -> dict:
    """``{name: LoDTensor}`` of the program's parameters (``mode="param"``), other persistables
    (``"opt"``) or both (``"all"``), read from ``scope`` (default: the global scope)."""
    choose = {"all": lambda v: True, "param": is_parameter, "opt": is_optimizer_state}.get(mode)
    if choose is None:
        raise ValueError(f"mode must be 'all', 'param' or 'opt', got {mode!r}")
    scope = global_scope() if scope is None else scope
    state = {}
    for var in persistables(program):
        if not choose(var):
            continue
        array = scope._get_array(var.name)
        if array is None:
            raise ValueError(f"Can not find Variable '{var.name}' in the scope. Make sure it is initialized "
                             "(run the startup program first)")
        state[var.name] = LoDTensor._untracked(array)
    return state


def set_program_state_dict(program: Program, state_dict: dict, scope=None, source="set_state_dict") -> None:
    """Store the values of ``state_dict`` (name -> ndarray/Tensor/LoDTensor) into the program's
    persistable variables; names the program lacks, and variables the dict lacks, are logged."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"{source}: expected a dict of name -> value, got {type(state_dict).__name__}")
    scope = global_scope() if scope is None else scope
    pairs, missing = [], []
    for var in persistables(program):
        if var.name in state_dict:
            pairs.append((var, state_dict[var.name]))
        else:
            missing.append(var.name)
    store(scope, pairs, source)
    for name in missing:
        _log.warning("Skip loading for '%s': it is not in the provided dict", name)
    unused = sorted(set(state_dict) - {v.name for v in persistables(program)})
    if unused:
        _log.warning("These values were not set, no persistable variable of the program has their names: %s", unused)


Program.state_dict = lambda self, mode="all", scope=None: program_state_dict(self, mode, scope)
Program.set_state_dict = lambda self, state_dict, scope=None: set_program_state_dict(self, state_dict, scope)
Program.state_dict.__doc__ = program_state_dict.__doc__
Program.set_state_dict.__doc__ = set_program_state_dict.__doc__


# --- static.save / static.load ----------------------------------------------------------------
def _prefix(model_path, what: str) -> str:
    if not isinstance(model_path, (str, os.PathLike)):
        raise TypeError(f"{what}: model_path must be a str, got {type(model_path).__name__}")
    model_path = os.fspath(model_path)
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):
        if model_path.endswith(suffix):
            model_path = model_path[: -len(suffix)]
    if os.path.basename(model_path) == "":
        raise ValueError("The input model_path MUST be format of dirname/filename [dirname\\filename in Windows "
                         f"system], but received model_path is empty string: {model_path!r}")
    return model_path


def _check_program(program, what: str) -> Program:
    from ..runtime.compiled import CompiledProgram

    if isinstance(program, CompiledProgram):
        program = program._program
    if not isinstance(program, Program):
        raise TypeError(f"{what}: expected a Program, got {type(program).__name__}")
    return program


def _extra_state(program: Program) -> dict:
    extra = {}
    schedules = {name: s.state_dict() for name, s in program._lr_schedulers.items() if hasattr(s, "state_dict")}
    if schedules:
        extra["lr_schedulers"] = schedules
    if program._random_seed:
        extra["program_rng_state"] = program.random_generator().get_state()
        places = [ref() for ref in getattr(program, "_place_programs", [])]
        if places and all(p is not None and p.random_generator() is not None for p in places):
            extra["place_rng_states"] = [p.random_generator().get_state() for p in places]
    return extra


def _restore_extra(program: Program, extra: dict) -> None:
    for name, state in extra.get("lr_schedulers", {}).items():
        schedule = program._lr_schedulers.get(name)
        if schedule is not None and hasattr(schedule, "set_state_dict"):
            schedule.set_state_dict(state)
    rng = extra.get("program_rng_state")
    if rng is not None and program._random_seed:
        program.random_generator().set_state(rng)
    places = extra.get("place_rng_states")
    if places and program._random_seed:
        live = [ref() for ref in getattr(program, "_place_programs", [])]
        if len(live) == len(places) and all(p is not None for p in live):
            for place_program, state in zip(live, places):
                place_program.random_generator().set_state(state)
        else:    # data parallel compiles at the first run: the states wait for it
            program._pending_place_rng = places


def save(program, model_path, protocol=4, **configs) -> None:
    """``paddle.static.save``: parameters to ``<model_path>.pdparams``, optimizer state (and LR
    schedule and program RNG state) to ``.pdopt``, the program to ``.pdmodel``."""
    program = _check_program(program, "static.save")
    prefix = _prefix(model_path, "static.save")
    if not isinstance(protocol, int) or isinstance(protocol, bool) or not 1 < protocol < 5:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol!r}")
    params = program_state_dict(program, "param")
    opt = program_state_dict(program, "opt")
    fio.write_state(prefix + ".pdparams", {k: np.array(v) for k, v in params.items()})
    fio.write_state(prefix + ".pdopt", {k: np.array(v) for k, v in opt.items()}, _extra_state(program))
    write_program(prefix + ".pdmodel", program)


def write_program(path: str, program: Program, extra: dict | None = None) -> None:
    import json

    meta = {fio.PROGRAM_KEY: json.dumps(program.to_dict(), separators=(",", ":"))}
    for key, value in (extra or {}).items():
        meta[key] = json.dumps(value)
    container.write(path, {}, meta, kind=fio.PROGRAM_KIND)


def load(program, model_path, executor=None, var_list=None) -> None:
    """``paddle.static.load``: restore the program's parameters (and optimizer state, if the
    ``.pdopt`` file exists) into the global scope; every value is checked against its variable."""
    program = _check_program(program, "static.load")
    prefix = _prefix(model_path, "static.load")
    if not os.path.exists(prefix + ".pdparams"):
        from .fluid_io import load_vars_from

        if os.path.isdir(prefix):   # the 1.x save_params/save_persistables directory layout
            wanted = var_list if var_list is not None else persistables(program)
            load_vars_from(prefix, wanted, None, global_scope(), "static.load")
            return
        raise ValueError(f"static.load: no such file: {prefix + '.pdparams'!r}")
    params, _ = fio.read_state(prefix + ".pdparams")
    _load_group(program, params, [v for v in persistables(program) if is_parameter(v)], prefix + ".pdparams")
    opt_vars = [v for v in persistables(program) if is_optimizer_state(v)]
    if os.path.exists(prefix + ".pdopt"):
        opt, extra = fio.read_state(prefix + ".pdopt")
        _load_group(program, opt, opt_vars, prefix + ".pdopt")
        _restore_extra(program, extra)
    elif opt_vars:   # as the reference: a program with optimizer state needs the .pdopt file
        raise CheckpointError(f"static.load: the program has optimizer state ({opt_vars[0].name!r}, ...) but "
                              f"{prefix + '.pdopt'!r} does not exist")


def _load_group(program, arrays: dict, variables: list, path: str) -> None:
    missing = [v.name for v in variables if v.name not in arrays]
    if missing:
        raise CheckpointError(f"{path}: has no value for {missing[:8]}{' ...' if len(missing) > 8 else ''}: "
                              "was it saved from another program?")
    store(global_scope(), [(v, arrays[v.name]) for v in variables], path)


def load_program_state(model_path, var_list=None) -> dict:
    """``static.load_program_state``: name -> ndarray of what ``static.save`` wrote (both files),
    or of a 1.x ``save_vars`` directory (``var_list`` names what to read)."""
    prefix = _prefix(model_path, "load_program_state")
    if not os.path.exists(prefix + ".pdparams"):
        from .fluid_io import read_vars_dir

        if os.path.isdir(prefix):
            return read_vars_dir(prefix, var_list)
        raise ValueError(f"load_program_state: no such file: {prefix + '.pdparams'!r}")
    state, _ = fio.read_state(prefix + ".pdparams")
    if os.path.exists(prefix + ".pdopt"):
        state.update(fio.read_state(prefix + ".pdopt")[0])
    return state


def set_program_state(program, state_dict) -> None:
    """``static.set_program_state``: store ``state_dict``'s values into the program's persistables."""
    set_program_state_dict(_check_program(program, "set_program_state"), state_dict, source="set_program_state")
