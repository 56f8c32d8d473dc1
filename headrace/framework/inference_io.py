"""Inference models: a program pruned to what its fetches need, in test mode, with its parameters.

``normalize_program`` makes that program: ``clone(for_test=True)`` (no backward or optimizer ops;
dropout and batch norm in inference mode), then only the ops the fetch targets depend on, given
the feeds, and only the variables those ops use; the feed variables become data variables.  The
feed and fetch names travel with the program (metadata of the ``.pdmodel`` file).

``save_inference_model(path_prefix, ...)`` writes ``<prefix>.pdmodel`` and ``<prefix>.pdiparams``;
``load_inference_model`` returns ``[program, feed_target_names, fetch_targets]`` after storing the
parameters into the global scope.  The ``serialize_*``/``deserialize_*`` functions give the same
content as bytes, ``save_to_file``/``load_from_file`` write and read bytes (atomically).
"""
from __future__ import annotations

import json
import os

from ..core.errors import CheckpointError
from ..core.program import Program
from ..core.variable import Variable
from ..core import context
from ..runtime.scope import global_scope
from . import container, io as fio, static_io

FEEDS_KEY, FETCHES_KEY = "headrace_feed_names", "headrace_fetch_names"


def _var_list(values, what: str) -> list:
    if isinstance(values, Variable):
        values = [values]
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{what}: expected a Variable or a non-empty list of Variables, got {values!r}")
    for v in values:
        if not isinstance(v, Variable):
            raise TypeError(f"{what}: expected Variables, got a {type(v).__name__}: {v!r}")
    return list(values)


def normalize_program(program, feed_vars, fetch_vars) -> Program:
    """The inference program: test mode, pruned to what ``fetch_vars`` need given ``feed_vars``."""
    if not isinstance(program, Program):
        raise TypeError(f"normalize_program: program must be a Program, got {type(program).__name__}")
    feeds = [v.name for v in _var_list(feed_vars, "feed_vars")]
    fetches = [v.name for v in _var_list(fetch_vars, "fetch_vars")]
    spec = program.clone(for_test=True).to_dict()
    block = spec["blocks"][0]
    needed, kept = set(fetches), []
    for ospec in reversed(block["ops"]):
        outs = {n for names in ospec["outputs"].values() for n in names}
        if outs & needed:
            kept.append(ospec)
            needed |= {n for names in ospec["inputs"].values() for n in names} - set(feeds)
    kept.reverse()
    block["ops"] = kept
    used = set(feeds) | set(fetches) | {n for o in kept for s in ("inputs", "outputs") for ns in o[s].values() for n in ns}
    block["vars"] = [v for v in block["vars"] if v["name"] in used]
    for vspec in block["vars"]:
        if vspec["name"] in feeds:
            vspec["is_data"] = True
    missing = [n for n in feeds + fetches if n not in {v["name"] for v in block["vars"]}]
    if missing:
        raise ValueError(f"normalize_program: {missing} are not variables of the program")
    pruned = Program.from_dict(spec)
    pruned._is_test = True
    pruned._feed_names, pruned._fetch_names = feeds, fetches
    return pruned


def _check_kwargs(what: str, kwargs: dict, supported) -> None:
    unknown = sorted(set(kwargs) - set(supported))
    if unknown:
        raise ValueError(f"The additional parameter ({', '.join(unknown)}) of `{what}` is not supported "
                         f"(supported: {', '.join(supported)}).")


def _names_meta(program) -> dict:
    return {FEEDS_KEY: json.dumps(program._feed_names), FETCHES_KEY: json.dumps(program._fetch_names)}


def serialize_program(feed_vars, fetch_vars, **kwargs) -> bytes:
    """The pruned inference program (of ``kwargs['program']``, default the main program) as bytes."""
    _check_kwargs("serialize_program", kwargs, ("program", "legacy_format"))
    program = normalize_program(kwargs.get("program") or context.default_main_program(), feed_vars, fetch_vars)
    meta = {fio.PROGRAM_KEY: json.dumps(program.to_dict(), separators=(",", ":"))}
    meta.update(_names_meta(program))
    return container.to_bytes({}, meta, kind=fio.PROGRAM_KIND)


def serialize_persistables(feed_vars, fetch_vars, executor=None, **kwargs) -> bytes:
    """The values of the persistables the pruned inference program uses, as bytes."""
    _check_kwargs("serialize_persistables", kwargs, ("program", "legacy_format"))
    program = normalize_program(kwargs.get("program") or context.default_main_program(), feed_vars, fetch_vars)
    return container.to_bytes(_persistable_arrays(program), kind=fio.STATE_KIND)


def _persistable_arrays(program) -> dict:
    import numpy as np

    return {k: np.array(v) for k, v in static_io.program_state_dict(program, "all").items()}


def _program_from(arrays_meta: tuple, name: str) -> tuple:
    _, meta = arrays_meta
    if meta.get(container.KIND_KEY) != fio.PROGRAM_KIND:
        raise CheckpointError(f"{name}: expected a program, the content holds {meta.get(container.KIND_KEY)!r}")
    program = Program.from_dict(json.loads(meta[fio.PROGRAM_KEY]))
    feeds = json.loads(meta.get(FEEDS_KEY, "[]"))
    fetches = json.loads(meta.get(FETCHES_KEY, "[]"))
    return program, feeds, fetches


def deserialize_program(data) -> Program:
    """The Program ``serialize_program`` (or a ``.pdmodel`` file's bytes) describes, validated."""
    program, feeds, fetches = _program_from(container.from_bytes(data, "<program bytes>"), "<program bytes>")
    program._feed_names, program._fetch_names = feeds, fetches
    return program


def deserialize_persistables(program, data, executor=None) -> None:
    """Store the values ``serialize_persistables`` gave into the program's variables (global scope)."""
    arrays, _ = container.from_bytes(data, "<persistable bytes>")
    variables = [v for v in static_io.persistables(program) if v.name in arrays]
    static_io.store(global_scope(), [(v, arrays[v.name]) for v in variables], "deserialize_persistables")


def save_to_file(path, content) -> None:
    """Write bytes to ``path`` atomically."""
    if not isinstance(content, (bytes, bytearray)):
        raise TypeError(f"save_to_file: content must be bytes, got {type(content).__name__}")
    with container.atomic_file(path) as f:
        f.write(content)


def load_from_file(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor, **kwargs) -> None:
    """``paddle.static.save_inference_model``: ``<path_prefix>.pdmodel`` (the pruned test-mode
    program, with its feed and fetch names) and ``<path_prefix>.pdiparams`` (its persistables)."""
    _check_kwargs("save_inference_model", kwargs, ("program", "clip_extra", "legacy_format"))
    prefix = static_io._prefix(path_prefix, "save_inference_model")
    program = kwargs.get("program") or context.default_main_program()
    from ..runtime.compiled import CompiledProgram

    if isinstance(program, CompiledProgram):
        program = program._program
    pruned = normalize_program(program, feed_vars, fetch_vars)
    static_io.write_program(prefix + ".pdmodel", pruned, {FEEDS_KEY: pruned._feed_names,
                                                        FETCHES_KEY: pruned._fetch_names})
    fio.write_state(prefix + ".pdiparams", _persistable_arrays(pruned))


def read_model_file(path: str) -> tuple:
    """``(program, feed names, fetch names)`` of a ``.pdmodel`` (or 1.x ``__model__``) file."""
    return _program_from(container.read(path), path)


def load_inference_model(path_prefix, executor, **kwargs) -> list:
    """``paddle.static.load_inference_model``: ``[program, feed_target_names, fetch_targets]``;
    the parameters are stored into the global scope."""
    _check_kwargs("load_inference_model", kwargs, ("model_filename", "params_filename"))
    prefix = os.fspath(path_prefix)
    model = kwargs.get("model_filename") or prefix + ".pdmodel"
    params = kwargs.get("params_filename") or prefix + ".pdiparams"
    if not os.path.isfile(model):
        raise ValueError(f"load_inference_model: there is no model file {model!r}")
    program, feeds, fetches = read_model_file(model)
    arrays, _ = fio.read_state(params)
    _store_all(program, arrays, params)
    block = program.global_block()
    return [program, feeds, [block.var(n) for n in fetches]]


def _store_all(program, arrays: dict, source: str) -> None:
    variables = static_io.persistables(program)
    missing = [v.name for v in variables if v.name not in arrays]
    if missing:
        raise CheckpointError(f"{source}: has no value for {missing[:8]}")
    static_io.store(global_scope(), [(v, arrays[v.name]) for v in variables], source)


def load_prefix_or_dir(path: str, configs: dict):
    """``paddle.load`` of an inference-model prefix or a 1.x directory: name -> ndarray, or None."""
    if os.path.isfile(path + ".pdiparams"):
        return fio.read_state(path + ".pdiparams")[0]
    if os.path.isdir(path):
        from .fluid_io import read_vars_dir

        params = configs.get("params_filename")
        if params:
            return fio.read_state(os.path.join(path, params))[0]
        return read_vars_dir(path, None)
    return None
