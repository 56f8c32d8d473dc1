"""``fluid.io``: the 1.x saving API (facade over ``headrace/framework``)."""
from ..framework.fluid_io import (is_parameter, is_persistable, load_inference_model, load_params,
                                  load_persistables, load_vars, save_inference_model, save_params,
                                  save_persistables, save_vars)
from ..framework.static_io import load, load_program_state, save, set_program_state
from ..reader import (ComposeNotAligned, buffered, cache, chain, compose, firstn, map_readers, shuffle,
                      xmap_readers)
from ..reader.batch import batch
from ..io import DataLoader
from ..io.generator_loader import PyReader

__all__ = ["is_parameter", "is_persistable", "load", "load_inference_model", "load_params", "load_persistables",
           "load_program_state", "load_vars", "save", "save_inference_model", "save_params",
           "save_persistables", "save_vars", "set_program_state"]
__all__ += ["ComposeNotAligned", "DataLoader", "PyReader", "batch", "buffered", "cache", "chain", "compose",
            "firstn", "map_readers", "shuffle", "xmap_readers"]
