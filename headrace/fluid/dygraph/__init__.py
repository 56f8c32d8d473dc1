"""``paddle.fluid.dygraph``: the 1.x imperative API — ``guard()``, ``to_variable``, the layer
classes and the 1.x learning-rate schedule ``PiecewiseDecay`` — over headrace's eager mode."""
from __future__ import annotations

import contextlib

from ...core import context, names
from ...eager import Tensor, enable_grad, no_grad
from ...nn.layer import Layer
from ...nn.layers import Sequential
from ...nn.tensor import to_tensor
from ...optimizer.lr import FluidPiecewiseDecay as PiecewiseDecay
from ...optimizer.lr import LearningRateDecay
from ...optimizer.lr_fluid import (CosineDecay, ExponentialDecay, InverseTimeDecay, LambdaDecay, LinearLrWarmup,
                                   MultiStepDecay, NaturalExpDecay, NoamDecay, PolynomialDecay, ReduceLROnPlateau,
                                   StepDecay)
from . import nn
from .nn import BatchNorm, Conv2D, Dropout, Embedding, LayerNorm, Linear
from .pool import Pool2D
from .checkpoint import load_dygraph, save_dygraph


@contextlib.contextmanager
def guard(place=None):
    """Run the block in dygraph mode, with fresh unique names (as the reference's guard)."""
    with context.static_mode_guard(False), names.guard():
        yield


def enabled() -> bool:
    return context.in_dynamic_mode()


def to_variable(value, name=None, zero_copy=None, dtype=None):
    """A Tensor holding a copy of ``value`` (a NumPy array, or a Tensor), ``stop_gradient=True``."""
    if isinstance(value, Tensor):
        return value if dtype is None else value.astype(dtype)
    out = to_tensor(value, dtype=dtype)
    if name is not None:
        out.name = name
    return out


__all__ = ["CosineDecay", "ExponentialDecay", "InverseTimeDecay", "LambdaDecay", "LinearLrWarmup", "MultiStepDecay",
           "NaturalExpDecay", "NoamDecay", "PolynomialDecay", "ReduceLROnPlateau", "StepDecay",
           "Pool2D", "BatchNorm", "Conv2D", "Dropout", "Embedding", "Layer", "LayerNorm", "LearningRateDecay", "Linear",
           "PiecewiseDecay", "Sequential", "enable_grad", "enabled", "guard", "no_grad", "nn", "to_variable",
           "load_dygraph", "save_dygraph"]
