"""``fluid.dygraph.save_dygraph`` / ``load_dygraph``: the 1.x dygraph checkpoint pair.

``save_dygraph(state_dict, model_path)`` writes ``model_path + ".pdparams"`` when the dict holds
parameters (a Layer's ``state_dict()``) and ``model_path + ".pdopt"`` otherwise (an optimizer's);
``load_dygraph(model_path)`` returns ``(param_dict, opt_dict)`` read from those two files, ``None``
for a file that does not exist, values as ndarrays (an optimizer's ``"LR_Scheduler"`` entry stays
a dict).  The files are ``headrace.save`` files (``headrace.load`` reads them too)."""
from __future__ import annotations

import os

from ...eager.tensor import Parameter
from ...framework.io import load, save

_SUFFIXES = (".pdparams", ".pdopt", ".pdmodel")


def save_dygraph(state_dict, model_path) -> None:
    """Save a Layer's or an optimizer's ``state_dict`` to ``model_path`` + ``.pdparams`` / ``.pdopt``."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"save_dygraph: state_dict must be a dict from state_dict(), got {type(state_dict).__name__}")
    model_path = os.fspath(model_path)
    if os.path.basename(model_path) == "":
        raise ValueError(f"save_dygraph: model_path {model_path!r} has an empty file prefix; it should be "
                         "'dirname/file_prefix' or 'file_prefix'")
    suffix = ".pdparams" if any(isinstance(v, Parameter) for v in state_dict.values()) else ".pdopt"
    save(state_dict, model_path + suffix)


def load_dygraph(model_path, **configs):
    """``(param_dict, opt_dict)`` from ``model_path + ".pdparams"`` and ``+ ".pdopt"`` (a suffix on
    ``model_path`` is ignored); ``None`` for the one that is missing, an error if both are."""
    model_path = os.fspath(model_path)
    for suffix in _SUFFIXES:
        if model_path.endswith(suffix):
            model_path = model_path[:-len(suffix)]
            break
    found = [path if os.path.isfile(path) else None for path in (model_path + ".pdparams", model_path + ".pdopt")]
    if found == [None, None]:
        raise ValueError(f"load_dygraph: neither {model_path}.pdparams nor {model_path}.pdopt exists")
    return tuple(None if path is None else load(path, return_numpy=True) for path in found)
