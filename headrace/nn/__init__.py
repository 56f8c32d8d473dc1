"""Layers: functional ops, parameters and initializers (static layers live in static_layers)."""
from . import functional, initializer  # noqa: F401
from .param_attr import ParamAttr

__all__ = ["ParamAttr", "functional", "initializer"]
