"""Reading the reference system's pickled files (``.pdparams``, ``.pdopt``, ``paddle.save`` output)
without running code from them.

A pickle is a program for a small stack machine whose ``GLOBAL``/``STACK_GLOBAL`` instructions
import any callable and ``REDUCE`` calls it: unpickling an untrusted file can run anything.
``RestrictedUnpickler.find_class`` admits only what rebuilding NumPy arrays and plain containers
needs (the names below); any other name is refused with a ``CheckpointError`` *before* it is
imported or called, so the file's payload never runs.  Object-dtype arrays are refused too (their
items would be arbitrary objects).  Built-in containers (dict, list, tuple, str, numbers) need no
imports: the pickle machine builds them itself.  Protocol 2 writes bytes as
``_codecs.encode(text, "latin1")``: that one call is admitted, for latin-1 only.  A fetched size-1
value (``headrace.core.fetched.ScalarArray``, an ndarray subclass that adds only scalar
conversions) pickled by the user loads as a plain ndarray, as the reference's fetched values are.
"""
from __future__ import annotations

import io
import pickle

import numpy as np

from ..core.errors import CheckpointError

PICKLE_PROTOCOL_BYTE = 0x80   # every pickle of protocol >= 2 starts with the PROTO opcode

_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("builtins", "tuple"), ("builtins", "list"), ("builtins", "dict"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "complex"), ("builtins", "bytearray"),
    ("__builtin__", "tuple"), ("__builtin__", "list"), ("__builtin__", "set"),
}


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler that imports only NumPy array reconstruction and plain containers."""

    def __init__(self, file, path: str):
        super().__init__(file, encoding="latin1")
        self._path = path

    def find_class(self, module, name):
        if (module, name) == ("_codecs", "encode"):   # protocol 2 spells bytes as encode(text, "latin1")
            return self._latin1_bytes
        if (module, name) in (("headrace.core.fetched", "ScalarArray"), ("headrace.core.fetched", "ScalarRows")):
            # a fetched value, rebuilt as its plain ndarray
            return np.ndarray
        if (module, name) not in _ALLOWED:
            raise CheckpointError(
                f"{self._path}: refused to load: the pickle asks for `{module}.{name}`, which could run code; "
                "only NumPy arrays and plain containers (dict, list, tuple, numbers, str) are loaded from "
                "pickles. Re-save the object with headrace.save (a safetensors-layout file that cannot carry code).")
        return super().find_class(module, name)


    def _latin1_bytes(self, text, encoding="utf-8"):
        if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
            raise CheckpointError(f"{self._path}: refused to load: the pickle asks for `_codecs.encode` with "
                                  f"{type(text).__name__}/{encoding!r}; only latin-1 bytes are admitted")
        return text.encode("latin1")


def load_pickle(data: bytes, path: str):
    """The object a (reference-made) pickle holds, built without running any of its code."""
    try:
        obj = RestrictedUnpickler(io.BytesIO(data), path).load()
    except CheckpointError:
        raise
    except Exception as exc:   # a truncated or corrupt pickle: any unpickling error
        raise CheckpointError(f"{path}: corrupt or truncated pickle ({type(exc).__name__}: {exc})") from None
    _refuse_object_arrays(obj, path)
    return obj


def _refuse_object_arrays(obj, path: str) -> None:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray) and item.dtype.hasobject:
            raise CheckpointError(f"{path}: refused to load: an array of dtype object (its items could be any object)")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
