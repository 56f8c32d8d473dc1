"""``paddle.save`` / ``paddle.load``: any state (Layer and Optimizer state dicts, nested containers
of Tensors, ndarrays, numbers and strings, Programs) to one verified, atomically written file.

Files are containers (``framework/container.py``: the safetensors layout with a CRC-32, written
through a temporary file, fsync and rename).  The object's structure is JSON in the container's
metadata (``framework/tree.py``), its arrays are the container's tensors.  ``load`` also reads the
reference system's pickled ``.pdparams``/``.pdopt``/``paddle.save`` files through a restricted
unpickler that runs no code from the file (``framework/safe_pickle.py``).
"""
from __future__ import annotations

import io
import json
import os

import numpy as np

from ..core import context
from ..core.errors import CheckpointError
from ..eager.tensor import Tensor
from ..runtime.scope import LoDTensor
from . import container, tree
from .safe_pickle import PICKLE_PROTOCOL_BYTE, load_pickle

OBJECT_KIND, STATE_KIND, PROGRAM_KIND = "object", "state", "program"
TREE_KEY, PROGRAM_KEY = "headrace_tree", "headrace_program"
NAME_TABLE_KEY = "StructuredToParameterName@@"   # the reference's name table in a Layer's state dict

_SAVE_CONFIGS = {"use_binary_format", "pickle_protocol"}
_LOAD_CONFIGS = {"model_filename", "params_filename", "keep_name_table", "return_numpy"}


def check_save_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"only supports saving objects to file and `BytesIO`, but got {type(path)}")
    path = os.fspath(path)
    if os.path.basename(path) == "":
        raise ValueError(f"The input path MUST be format of dirname/filename, but received filename is "
                         f"empty string: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"save: {path!r} is a directory; give a file name such as {os.path.join(path, 'model.pdparams')!r}")
    return path


def _is_buffer(path) -> bool:
    return isinstance(path, (io.BytesIO, io.BufferedIOBase)) or (
        hasattr(path, "read") and hasattr(path, "write") and hasattr(path, "seek"))


def save(obj, path, protocol=4, **configs) -> None:
    """Save ``obj`` to the file ``path`` (written atomically, checksummed, loadable without running
    code) or into a ``BytesIO``.  ``obj``: a Layer's or Optimizer's ``state_dict()``, a Tensor, an
    ndarray, a Program, or dict/list/tuple nests of those and of numbers and strings (a static
    Variable is saved as its value in the global scope).  ``protocol`` (2..4) is checked for
    compatibility with the reference; the file is never a pickle."""
    unknown = set(configs) - _SAVE_CONFIGS
    if unknown:
        raise ValueError(f"The additional config ({', '.join(sorted(unknown))}) of `paddle.save` is not supported.")
    if not isinstance(protocol, int) or isinstance(protocol, bool) or not 1 < protocol < 5:
        raise ValueError(f"Expected 1<'protocol'<5, but received protocol={protocol!r}")
    node, arrays = tree.encode(obj)
    meta = {TREE_KEY: json.dumps(node, separators=(",", ":"))}
    if _is_buffer(path):
        path.write(container.to_bytes(arrays, meta, kind=OBJECT_KIND))
        return
    container.write(check_save_path(path), arrays, meta, kind=OBJECT_KIND)


def _converter(return_numpy: bool):
    """How loaded tensors come back: ndarrays (``return_numpy``), eager Tensors (dygraph mode) or
    scope tensors (``LoDTensor``, static mode), as the reference's load."""
    if return_numpy:
        return None
    if context.in_static_mode():
        return lambda array, name: LoDTensor._untracked(array)
    return lambda array, name: Tensor(array, name=name)


def load(path, **configs):
    """Load what ``save`` (or ``static.save``, or the reference's ``paddle.save``) wrote to the
    file ``path`` or into a ``BytesIO``.  Saved Tensors (and the arrays of a state dict) come
    back as Tensors in dygraph mode, as LoDTensors in static mode, as ndarrays with
    ``return_numpy=True``.  A prefix of an inference model or a 1.x directory loads its
    parameters.  Corrupt, truncated or unsafe files raise ``CheckpointError`` naming the file."""
    unknown = set(configs) - _LOAD_CONFIGS
    if unknown:
        raise ValueError(f"The additional config ({', '.join(sorted(unknown))}) of `paddle.load` is not supported.")
    convert = _converter(bool(configs.get("return_numpy", False)))
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(path, str) and not _is_buffer(path):
        raise TypeError(f"load: path must be a file path (str) or a BytesIO, got {type(path).__name__}")
    if isinstance(path, str) and not os.path.isfile(path):
        from .inference_io import load_prefix_or_dir

        found = load_prefix_or_dir(path, configs)
        if found is None:
            raise ValueError(f"The ``path`` ({path}) to load model not exists.")
        return _state_convert(found, convert)
    kind, obj = read_file(path, convert)
    if kind == PICKLE_KIND:
        return _from_pickle(obj, convert, bool(configs.get("keep_name_table", False)))
    if kind == OBJECT_KIND:
        return _state_convert(obj, convert) if _is_state_dict(obj) else obj
    if kind == STATE_KIND:
        return _state_convert(obj[0], convert)
    return obj


PICKLE_KIND = "pickle"


def read_file(path, convert=None):
    """``(kind, object)`` of a file (or buffer): ``object`` decoded from a headrace container
    (kinds object, state, program), or what a reference pickle holds (kind ``pickle``).  Saved
    Tensors become ``convert(array, name)`` (ndarrays when ``convert`` is None)."""
    if _is_buffer(path):
        data, path = path.read(), "<buffer>"
        if data[:1] and data[0] == PICKLE_PROTOCOL_BYTE:
            return PICKLE_KIND, rejoin_split_arrays(load_pickle(data, path), path)
        arrays, meta = container.from_bytes(data, path)
    else:
        with open(path, "rb") as f:
            first = f.read(1)
        if first and first[0] == PICKLE_PROTOCOL_BYTE:
            with open(path, "rb") as f:
                return PICKLE_KIND, rejoin_split_arrays(load_pickle(f.read(), path), path)
        arrays, meta = container.read(path)
    kind = meta.get(container.KIND_KEY, STATE_KIND)    # another writer's safetensors file: a state
    if kind == OBJECT_KIND:
        return kind, tree.decode(_json(meta, TREE_KEY, path), arrays, convert, path)
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


def write_states(files: dict) -> None:
    """``write_state`` for many files (path -> arrays) in one batch (``container.write_many``)."""
    container.write_many([(path, arrays, {}, STATE_KIND) for path, arrays in files.items()])


def read_state(path: str) -> tuple:
    """``(arrays, extra)`` of a state file; a reference pickle of name -> array also reads."""
    kind, obj = read_file(path)
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
        isinstance(v, (np.ndarray, Tensor, LoDTensor)) or (isinstance(v, dict) and k == "LR_Scheduler")
        for k, v in obj.items())


def _state_convert(obj: dict, convert) -> dict:
    """A state dict's ndarray values made Tensors/LoDTensors (the reference's load does this)."""
    if convert is None:
        return obj
    return type(obj)((k, convert(v, str(k)) if isinstance(v, np.ndarray) else v) for k, v in obj.items())


SPLIT_TABLE_KEY = "UnpackBigParamInfor@@"   # the reference's table of arrays it pickled in slices


def rejoin_split_arrays(obj, path: str):
    """The reference pickles arrays too large for protocols 2-3 as flat slices plus a table
    ``{name: {"OriginShape": shape, "slices": [slice names]}}``; put them back together."""
    if not isinstance(obj, dict) or SPLIT_TABLE_KEY not in obj:
        return obj
    obj = type(obj)(obj)
    table = obj.pop(SPLIT_TABLE_KEY)
    try:
        for name, info in table.items():
            parts = [np.asarray(obj.pop(part)).reshape(-1) for part in info["slices"]]
            obj[name] = np.concatenate(parts).reshape(info["OriginShape"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{path}: corrupt table of split arrays ({type(exc).__name__}: {exc})") from None
    return obj


def _from_pickle(obj, convert, keep_name_table: bool):
    if isinstance(obj, dict) and not keep_name_table:
        obj = type(obj)((k, v) for k, v in obj.items() if k != NAME_TABLE_KEY)

    def walk(value):
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) \
                and isinstance(value[1], np.ndarray):   # the reference pickles a Tensor as (name, ndarray)
            return value[1] if convert is None else convert(value[1], value[0])
        if isinstance(value, dict):
            return type(value)((k, walk(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v) for v in value)
        return value

    obj = walk(obj)
    return _state_convert(obj, convert) if _is_state_dict(obj) else obj
