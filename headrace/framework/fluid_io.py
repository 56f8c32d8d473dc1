"""The fluid 1.x saving API: ``save_vars``/``load_vars`` and their ``_params``/``_persistables``
forms, and ``save_inference_model``/``load_inference_model`` with a directory.

Layout as the reference's: in ``dirname``, one file per variable named after it, or with
``filename`` one file holding them all; an inference model is ``dirname/__model__`` (or
``model_filename``) plus its parameters in the same two layouts (``params_filename``).  Every file
is a checksummed container written atomically (``framework/container.py``); values are checked
against their variables on load.
"""
from __future__ import annotations

import os

from ..core import context
from ..core.errors import CheckpointError
from ..core.program import Program
from ..core.variable import Variable
from ..runtime.scope import global_scope
from . import io as fio, static_io
from .inference_io import FEEDS_KEY, FETCHES_KEY, normalize_program, read_model_file

MODEL_FILENAME = "__model__"


def is_parameter(var) -> bool:
    return static_io.is_parameter(var)


def is_persistable(var) -> bool:
    return bool(var.persistable) and not var.is_data and var.type == "LOD_TENSOR"


def _program(main_program, what: str) -> Program:
    program = context.default_main_program() if main_program is None else main_program
    return static_io._check_program(program, what)


def _select(program, vars, predicate, what: str) -> list:
    if vars is None:
        predicate = predicate or is_persistable
        seen, chosen = set(), []
        for var in program.list_vars():
            if is_persistable(var) and predicate(var) and var.name not in seen:
                seen.add(var.name)
                chosen.append(var)
        return chosen
    chosen = []
    for var in vars:
        if isinstance(var, str):
            var = program.global_block().var(var)
        if not isinstance(var, Variable):
            raise TypeError(f"{what}: vars must be Variables (or names), got {type(var).__name__}")
        chosen.append(var)
    return chosen


def _scope_of(executor):
    return global_scope()


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None) -> None:
    """Save the chosen variables' values (``vars``, or those of ``main_program`` that
    ``predicate`` accepts) into ``dirname``: one file per variable, or one ``filename``."""
    program = _program(main_program, "save_vars")
    chosen = _select(program, vars, predicate, "save_vars")
    scope = _scope_of(executor)
    arrays = {}
    for var in chosen:
        value = scope._get_array(var.name)
        if value is None:
            raise ValueError(f"save_vars: variable {var.name!r} has no value in the scope (run the startup program first)")
        arrays[var.name] = value
    dirname = os.fspath(dirname)
    os.makedirs(dirname, exist_ok=True)
    if filename is not None:
        fio.write_state(os.path.join(dirname, filename), arrays)
        return
    fio.write_states({os.path.join(dirname, name): {name: value} for name, value in arrays.items()})


def save_params(executor, dirname, main_program=None, filename=None) -> None:
    """Save the parameters of ``main_program`` (see ``save_vars``)."""
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def save_persistables(executor, dirname, main_program=None, filename=None) -> None:
    """Save every persistable variable (parameters and optimizer state; see ``save_vars``)."""
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def read_vars_dir(dirname: str, var_list=None, filename=None) -> dict:
    """name -> ndarray from a ``save_vars`` directory (all files, or those ``var_list`` names)."""
    if filename is not None:
        return fio.read_state(os.path.join(dirname, filename))[0]
    names = None if var_list is None else [v.name if isinstance(v, Variable) else v for v in var_list]
    if names is None:
        names = sorted(n for n in os.listdir(dirname)
                       if os.path.isfile(os.path.join(dirname, n)) and not n.startswith(".") and n != MODEL_FILENAME)
    state = {}
    for name in names:
        path = os.path.join(dirname, name)
        if not os.path.isfile(path):
            raise CheckpointError(f"{dirname}: there is no file for variable {name!r}")
        arrays = fio.read_state(path)[0]
        if name not in arrays:
            raise CheckpointError(f"{path}: holds {sorted(arrays)[:4]}, not variable {name!r}")
        state[name] = arrays[name]
    return state


def load_vars_from(dirname: str, variables: list, filename, scope, source: str) -> None:
    state = read_vars_dir(dirname, variables, filename)
    missing = [v.name for v in variables if v.name not in state]
    if missing:
        raise CheckpointError(f"{os.path.join(dirname, filename or '')}: has no value for {missing[:8]}")
    static_io.store(scope, [(v, state[v.name]) for v in variables], source)


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None) -> None:
    """Load what ``save_vars`` saved into the chosen variables (checked: shape and dtype)."""
    program = _program(main_program, "load_vars")
    chosen = _select(program, vars, predicate, "load_vars")
    load_vars_from(os.fspath(dirname), chosen, filename, _scope_of(executor), "load_vars")


def load_params(executor, dirname, main_program=None, filename=None) -> None:
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename)


def load_persistables(executor, dirname, main_program=None, filename=None) -> None:
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename)


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False, clip_extra=False) -> list:
    """fluid 1.x: the pruned test-mode program to ``dirname/__model__`` (or ``model_filename``)
    and its persistables to ``dirname`` (one file each, or ``params_filename``); returns the
    fetch targets' names."""
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not isinstance(feeded_var_names, (list, tuple)) or not all(isinstance(n, str) for n in feeded_var_names):
        raise ValueError(f"'feed_var_names' should be a list of str, got {feeded_var_names!r}")
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    program = _program(main_program, "save_inference_model")
    block = program.global_block()
    pruned = normalize_program(program, [block.var(n) for n in feeded_var_names], list(target_vars))
    dirname = os.fspath(dirname)
    os.makedirs(dirname, exist_ok=True)
    static_io.write_program(os.path.join(dirname, model_filename or MODEL_FILENAME), pruned,
                            {FEEDS_KEY: pruned._feed_names, FETCHES_KEY: pruned._fetch_names})
    if not program_only:
        save_persistables(executor, dirname, pruned, params_filename)
    return list(pruned._fetch_names)


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, pserver_endpoints=None) -> list:
    """fluid 1.x: ``[program, feed_target_names, fetch_targets]`` from ``save_inference_model``'s
    directory; the parameters are stored into the global scope."""
    dirname = os.fspath(dirname)
    model = os.path.join(dirname, model_filename or MODEL_FILENAME)
    if not os.path.isfile(model):
        raise ValueError(f"load_inference_model: there is no model file {model!r}")
    program, feeds, fetches = read_model_file(model)
    load_persistables(executor, dirname, program, params_filename)
    block = program.global_block()
    return [program, feeds, [block.var(n) for n in fetches]]
