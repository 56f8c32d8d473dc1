"""Saving and loading (``paddle.save``/``load``, ``paddle.static`` and ``fluid.io`` functions):
checksummed container files written atomically, loaded without running code from them."""
from . import container, fluid_io, inference_io, io, static_io, tree, variable_value  # noqa: F401
from .io import load, save

__all__ = ["load", "save"]
