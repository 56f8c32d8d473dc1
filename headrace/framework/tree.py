"""An object tree as JSON plus named arrays: what ``paddle.save`` writes into a container file.

``encode(obj)`` returns ``(node, arrays)``: ``node`` is JSON (plain str/int/float/bool/None stand
for themselves; everything else is a dict tagged ``"T"``) and ``arrays`` maps keys ``"0"``, ``"1"``
... to the ndarrays the tree holds.  ``decode(node, arrays, ...)`` rebuilds the object.  Supported:
eager Tensors and Parameters (name and ``stop_gradient`` kept), ndarrays, scope tensors (saved as
ndarrays), NumPy scalars, dict/OrderedDict (any JSON-scalar keys, order kept), list, tuple, str,
bytes, int, float (also nan/inf), bool, None and Programs.  Anything else is a ``TypeError`` naming
where in the object it sits.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from ..core.errors import CheckpointError
from ..core.program import Program
from ..core.variable import Parameter as StaticParameter
from ..core.variable import Variable
from ..eager.tensor import Parameter, Tensor
from ..runtime.scope import LoDTensor, global_scope

TAG = "T"


class _Encoder:
    def __init__(self):
        self.arrays = {}

    def array(self, value) -> str:
        key = str(len(self.arrays))
        self.arrays[key] = np.asarray(value)
        return key

    def node(self, obj, where: str):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) in (int, bool):
            return obj
        if isinstance(obj, float) and type(obj) is float:
            return obj if math.isfinite(obj) else {TAG: "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return {TAG: "tensor", "key": self.array(obj._value), "name": obj.name,
                    "stop_gradient": bool(obj.stop_gradient), "parameter": isinstance(obj, Parameter)}
        if isinstance(obj, np.ndarray):
            return {TAG: "ndarray", "key": self.array(obj)}
        if isinstance(obj, LoDTensor):
            return {TAG: "ndarray", "key": self.array(np.array(obj))}
        if isinstance(obj, Variable):   # a static variable: its value in the global scope
            value = global_scope()._get_array(obj.name)
            if value is None:
                raise ValueError(f"cannot save {where}: static variable {obj.name!r} has no value in the global "
                                 "scope (run the startup program first)")
            return {TAG: "tensor", "key": self.array(value), "name": obj.name,
                    "stop_gradient": bool(obj.stop_gradient), "parameter": isinstance(obj, StaticParameter)}
        if isinstance(obj, np.generic):
            return {TAG: "npscalar", "key": self.array(np.asarray(obj))}
        if isinstance(obj, (bytes, bytearray)):
            return {TAG: "bytes", "hex": bytes(obj).hex()}
        if isinstance(obj, Program):
            return {TAG: "program", "spec": obj.to_dict()}
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (str, int, float, bool))):
                    raise TypeError(f"cannot save {where}: dict key {k!r} is a {type(k).__name__} "
                                    "(keys may be str, int, float, bool or None)")
                items.append([self.node(k, where), self.node(v, f"{where}[{k!r}]")])
            return {TAG: kind, "items": items}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {TAG: kind, "items": [self.node(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        raise TypeError(f"cannot save {where}: objects of type {type(obj).__name__} are not supported "
                        "(save Tensors, ndarrays, numbers, str, bytes, Programs and dict/list/tuple of them)")


def encode(obj) -> tuple:
    enc = _Encoder()
    return enc.node(obj, "obj"), enc.arrays


def decode(node, arrays: dict, convert, path: str):
    """The object ``node`` describes; saved tensors as ``convert(array, name)`` (ndarrays when
    ``convert`` is None)."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list) or not isinstance(node, dict) or TAG not in node:
        raise CheckpointError(f"{path}: corrupt object description near {node!r:.80}")
    kind = node[TAG]
    try:
        if kind in ("dict", "odict"):
            pairs = [(decode(k, arrays, convert, path), decode(v, arrays, convert, path)) for k, v in node["items"]]
            return collections.OrderedDict(pairs) if kind == "odict" else dict(pairs)
        if kind in ("list", "tuple"):
            items = [decode(v, arrays, convert, path) for v in node["items"]]
            return items if kind == "list" else tuple(items)
        if kind == "float":
            return float(node["v"])
        if kind == "bytes":
            return bytes.fromhex(node["hex"])
        if kind == "ndarray":
            return arrays[node["key"]]
        if kind == "npscalar":
            return arrays[node["key"]][()]
        if kind == "tensor":
            value = arrays[node["key"]]
            return value if convert is None else convert(value, str(node["name"]))
        if kind == "program":
            return Program.from_dict(node["spec"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CheckpointError) or type(exc).__module__.startswith("headrace"):
            raise
        raise CheckpointError(f"{path}: corrupt object description ({type(exc).__name__}: {exc})") from None
    raise CheckpointError(f"{path}: unknown object kind {kind!r} (written by a newer headrace?)")
