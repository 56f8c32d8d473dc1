"""``paddle.save`` / ``paddle.load``: any state (Layer and Optimizer state dicts, nested containers
of Tensors, ndarrays, numbers and strings, Programs) to one verified, atomically written file.

Files are containers (``framework/container.py``: the safetensors layout with a CRC-32, written
through a temporary file, fsync and rename).  The object's structure is JSON in the container's
metadata (``framework/tree.py``), its arrays are the container's tensors.  ``load`` also reads the
reference system's pickled ``.pdparams``/``.pdopt``/``paddle.save`` files through a restricted
unpickler that runs no code from the file (``framework/safe_pickle.py``).
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..core import context
from ..core.errors import CheckpointError
from ..eager.tensor import Tensor
from . import container, tree
from .safe_pickle import PICKLE_PROTOCOL_BYTE, load_pickle

OBJECT_KIND, STATE_KIND, PROGRAM_KIND = "object", "state", "program"
TREE_KEY, PROGRAM_KEY = "headrace_tree", "headrace_program"
NAME_TABLE_KEY = "StructuredToParameterName@@"   # the reference's name table in a Layer's state dict

_SAVE_CONFIGS = {"use_binary_format", "pickle_protocol"}
_LOAD_CONFIGS = {"model_filename", "params_filename", "keep_name_table", "return_numpy"}


def check_save_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a file path (str), got {type(path).__name__} "
                        "(saving to a buffer is not supported yet)")
    path = os.fspath(path)
    if os.path.basename(path) == "":
        raise ValueError(f"The input path MUST be format of dirname/filename, but received filename is "
                         f"empty string: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"save: {path!r} is a directory; give a file name such as {os.path.join(path, 'model.pdparams')!r}")
    return path


def save(obj, path, protocol=4, **configs) -> None:
    """Save ``obj`` to the file ``path`` (written atomically, checksummed, loadable without running
    code).  ``obj``: a Layer's or Optimizer's ``state_dict()``, a Tensor, an ndarray, a Program,
    or dict/list/tuple nests of those and of numbers and strings.  ``protocol`` (2..4) is checked
    for compatibility with the reference; the file is never a pickle."""
    unknown = set(configs) - _SAVE_CONFIGS
    if unknown:
        raise ValueError(f"The additional config ({', '.join(sorted(unknown))}) of `paddle.save` is not supported.")
    if not isinstance(protocol, int) or isinstance(protocol, bool) or not 1 < protocol < 5:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol!r}")
    path = check_save_path(path)
    node, arrays = tree.encode(obj)
    meta = {TREE_KEY: json.dumps(node, separators=(",", ":"))}
    container.write(path, arrays, meta, kind=OBJECT_KIND)


def load(path, **configs):
    """Load what ``save`` (or ``static.save``, or the reference's ``paddle.save``) wrote to ``path``.
    In dygraph mode saved Tensors (and the arrays of a state dict) come back as Tensors unless
    ``return_numpy=True``; in static mode as ndarrays.  Corrupt, truncated or unsafe files raise
    ``CheckpointError`` naming the file."""
    unknown = set(configs) - _LOAD_CONFIGS
    if unknown:
        raise ValueError(f"The additional config ({', '.join(sorted(unknown))}) of `paddle.load` is not supported.")
    return_numpy = bool(configs.get("return_numpy", False)) or context.in_static_mode()
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(path, str):
        raise TypeError(f"load: path must be a file path (str), got {type(path).__name__}")
    if not os.path.isfile(path):
        from .inference_io import load_prefix_or_dir

        found = load_prefix_or_dir(path, configs)
        if found is None:
            raise ValueError(f"The ``path`` ({path}) to load model not exists.")
        return found if return_numpy else _state_to_tensors(found)
    kind, obj = read_file(path, tensors=not return_numpy)
    if kind == PICKLE_KIND:
        return _from_pickle(obj, return_numpy, bool(configs.get("keep_name_table", False)))
    if kind == OBJECT_KIND:
        return _state_to_tensors(obj) if not return_numpy and _is_state_dict(obj) else obj
    if kind == STATE_KIND:
        return obj[0] if return_numpy else _state_to_tensors(obj[0])
    return obj


PICKLE_KIND = "pickle"


def read_file(path: str, tensors: bool | None = None):
    """``(kind, object)`` of a file: ``object`` decoded from a headrace container (kinds object,
    state, program), or what a reference pickle holds (kind ``pickle``)."""
    if tensors is None:
        tensors = not context.in_static_mode()
    with open(path, "rb") as f:
        first = f.read(1)
    if first and first[0] == PICKLE_PROTOCOL_BYTE:
        with open(path, "rb") as f:
            return PICKLE_KIND, load_pickle(f.read(), path)
    arrays, meta = container.read(path)
    kind = meta.get(container.KIND_KEY, STATE_KIND)    # another writer's safetensors file: a state
    if kind == OBJECT_KIND:
        return kind, tree.decode(_json(meta, TREE_KEY, path), arrays, tensors, path)
    if kind == STATE_KIND:
        return kind, (arrays, _json(meta, TREE_KEY, path) if TREE_KEY in meta else {})
    if kind == PROGRAM_KIND:
        from ..core.program import Program

        return kind, Program.from_dict(_json(meta, PROGRAM_KEY, path))
    raise CheckpointError(f"{path}: unknown file kind {kind!r} (written by a newer headrace?)")


def _json(meta: dict, key: str, path: str):
    if key not in meta:
        raise CheckpointError(f"{path}: the file has no `{key}` entry; it is corrupt or was not written by headrace")
    try:
        return json.loads(meta[key])
    except ValueError as exc:
        raise CheckpointError(f"{path}: corrupt `{key}` entry ({exc})") from None


def write_state(path: str, arrays: dict, extra: dict | None = None) -> None:
    """A flat name -> array file (``static.save``'s ``.pdparams``/``.pdopt``); ``extra`` is JSON
    kept in the metadata (the LR schedule, the program's RNG state)."""
    meta = {} if not extra else {TREE_KEY: json.dumps(extra, separators=(",", ":"))}
    container.write(path, arrays, meta, kind=STATE_KIND)


def read_state(path: str) -> tuple:
    """``(arrays, extra)`` of a state file; a reference pickle of name -> array also reads."""
    kind, obj = read_file(path, tensors=False)
    if kind == PICKLE_KIND:
        if not isinstance(obj, dict):
            raise CheckpointError(f"{path}: expected a dict of name -> array, the pickle holds a {type(obj).__name__}")
        obj = {k: v for k, v in obj.items() if k != NAME_TABLE_KEY}
        return {k: _array_of(v, path, k) for k, v in obj.items() if not isinstance(v, dict)}, {}
    if kind == OBJECT_KIND and isinstance(obj, dict):    # paddle.save of a state dict
        return {k: _array_of(v, path, k) for k, v in obj.items() if not isinstance(v, dict)}, {}
    if kind != STATE_KIND:
        raise CheckpointError(f"{path}: expected saved variables, the file holds a {kind}")
    arrays, extra = obj
    return arrays, extra


def _array_of(value, path: str, name: str) -> np.ndarray:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        value = value[1]   # the reference pickles a Tensor as (name, ndarray)
    if isinstance(value, Tensor):
        return value._value
    if not isinstance(value, (np.ndarray, np.generic, int, float)):
        raise CheckpointError(f"{path}: {name!r} is a {type(value).__name__}, not an array")
    return np.asarray(value)


def _is_state_dict(obj) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(
        isinstance(v, (np.ndarray, Tensor)) or (isinstance(v, dict) and k == "LR_Scheduler")
        for k, v in obj.items())


def _state_to_tensors(obj: dict) -> dict:
    return type(obj)((k, Tensor(v, name=k) if isinstance(v, np.ndarray) else v) for k, v in obj.items())


def _from_pickle(obj, return_numpy: bool, keep_name_table: bool):
    if isinstance(obj, dict) and not keep_name_table:
        obj = type(obj)((k, v) for k, v in obj.items() if k != NAME_TABLE_KEY)

    def convert(value):
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) \
                and isinstance(value[1], np.ndarray):
            return value[1] if return_numpy else Tensor(value[1], name=value[0])
        if isinstance(value, dict):
            return type(value)((k, convert(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return type(value)(convert(v) for v in value)
        return value

    obj = convert(obj)
    return _state_to_tensors(obj) if not return_numpy and _is_state_dict(obj) else obj
