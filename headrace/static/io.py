"""``paddle.static.io``: saving and loading in static mode (facade over ``headrace/framework``)."""
from ..core.errors import CheckpointError
from ..framework.inference_io import (deserialize_persistables, deserialize_program, load_from_file,
                                      load_inference_model, normalize_program, save_inference_model,
                                      save_to_file, serialize_persistables, serialize_program)
from ..framework.io import PROGRAM_KIND, read_file
from ..framework.static_io import load, load_program_state, save, set_program_state


def load_program_file(path):
    """The Program a ``.pdmodel`` file holds (``static.save``, ``save_inference_model`` or
    ``paddle.save(program, ...)``), checked and validated."""
    kind, obj = read_file(str(path))
    if kind != PROGRAM_KIND:
        raise CheckpointError(f"{path}: expected a program file (.pdmodel), it holds a {kind}")
    return obj


__all__ = ["deserialize_persistables", "deserialize_program", "load", "load_from_file", "load_inference_model",
           "load_program_file", "load_program_state", "normalize_program", "save", "save_inference_model",
           "save_to_file", "serialize_persistables", "serialize_program", "set_program_state"]
