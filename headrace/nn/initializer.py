"""Initializers: each appends one op to the startup program that fills a parameter.

Seeding: an initializer's own ``seed`` (non-zero) fixes its draw; otherwise the op draws from the
startup program's generator when ``Program.random_seed`` is set, else from the global generator
(``paddle.seed``).  Either way, a run from the same seeds gives the same parameters.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import convert_dtype
from ..core.errors import AttrError, located


def compute_fans(shape) -> tuple:
    """(fan_in, fan_out) as the reference computes them for fc ([in, out]) and conv ([M, C, kh, kw])."""
    shape = list(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Base class: ``init(var, block)`` appends the filling op for ``var`` to ``block``."""

    def __call__(self, var, block=None):
        return self.init(var, block if block is not None else var.block)

    def init(self, var, block):
        raise NotImplementedError(f"{type(self).__name__} does not define init()")

    @staticmethod
    def _append(block, op_type, var, attrs):
        attrs = dict(attrs)
        attrs.setdefault("shape", list(var.shape))
        attrs.setdefault("dtype", str(var.dtype))
        return block.append_op(op_type, outputs={"Out": [var]}, attrs=attrs)


class Constant(Initializer):
    """Fill with ``value``."""

    def __init__(self, value=0.0, force_cpu=False):
        self.value = float(value)

    def init(self, var, block):
        return self._append(block, "fill_constant", var, {"value": self.value})


class Uniform(Initializer):
    """Uniform on [low, high)."""

    def __init__(self, low=-1.0, high=1.0, seed=0, name=None):
        if low >= high:
            raise located(AttrError, f"Uniform initializer needs low < high, got low={low}, high={high}")
        self.low, self.high, self.seed = float(low), float(high), int(seed)

    def init(self, var, block):
        return self._append(block, "uniform_random", var, {"min": self.low, "max": self.high, "seed": self.seed})


class Normal(Initializer):
    """Normal(mean, std). Accepts the fluid names ``loc``/``scale`` too."""

    def __init__(self, mean=0.0, std=1.0, seed=0, name=None, loc=None, scale=None):
        self.mean = float(loc if loc is not None else mean)
        self.std = float(scale if scale is not None else std)
        if self.std < 0:
            raise located(AttrError, f"Normal initializer needs std >= 0, got {self.std}")
        self.seed = int(seed)

    def init(self, var, block):
        return self._append(block, "gaussian_random", var, {"mean": self.mean, "std": self.std, "seed": self.seed})


class TruncatedNormal(Normal):
    """Normal(mean, std) with draws beyond two standard deviations redrawn."""

    def init(self, var, block):
        return self._append(block, "truncated_gaussian_random", var,
                            {"mean": self.mean, "std": self.std, "seed": self.seed})


class XavierInitializer(Initializer):
    """Glorot: uniform limit sqrt(6 / (fan_in + fan_out)), or normal std sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0, gain=1.0):
        self.uniform, self.fan_in, self.fan_out, self.seed, self.gain = uniform, fan_in, fan_out, int(seed), gain

    def init(self, var, block):
        f_in, f_out = compute_fans(var.shape)
        f_in = self.fan_in if self.fan_in is not None else f_in
        f_out = self.fan_out if self.fan_out is not None else f_out
        if self.uniform:
            limit = self.gain * math.sqrt(6.0 / (f_in + f_out))
            return self._append(block, "uniform_random", var, {"min": -limit, "max": limit, "seed": self.seed})
        std = self.gain * math.sqrt(2.0 / (f_in + f_out))
        return self._append(block, "gaussian_random", var, {"mean": 0.0, "std": std, "seed": self.seed})


class XavierUniform(XavierInitializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        super().__init__(True, fan_in, fan_out, 0, gain)


class XavierNormal(XavierInitializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        super().__init__(False, fan_in, fan_out, 0, gain)


def _kaiming_gain(nonlinearity: str, negative_slope: float) -> float:
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity in ("linear", "sigmoid", "conv2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    raise located(AttrError, f"unsupported nonlinearity {nonlinearity!r} for Kaiming/MSRA initialization")


class MSRAInitializer(Initializer):
    """He/Kaiming: uniform limit gain*sqrt(3/fan_in), or normal std gain/sqrt(fan_in) (gain sqrt 2 for relu)."""

    def __init__(self, uniform=True, fan_in=None, seed=0, negative_slope=0.0, nonlinearity="relu"):
        self.uniform, self.fan_in, self.seed = uniform, fan_in, int(seed)
        self.gain = _kaiming_gain(nonlinearity, negative_slope)

    def init(self, var, block):
        f_in = self.fan_in if self.fan_in is not None else compute_fans(var.shape)[0]
        if self.uniform:
            limit = self.gain * math.sqrt(3.0 / f_in)
            return self._append(block, "uniform_random", var, {"min": -limit, "max": limit, "seed": self.seed})
        std = self.gain / math.sqrt(f_in)
        return self._append(block, "gaussian_random", var, {"mean": 0.0, "std": std, "seed": self.seed})


class KaimingNormal(MSRAInitializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        super().__init__(False, fan_in, 0, negative_slope, nonlinearity)


class KaimingUniform(MSRAInitializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu"):
        super().__init__(True, fan_in, 0, negative_slope, nonlinearity)


class Assign(Initializer):
    """Fill with a given array (its shape must equal the parameter's)."""

    def __init__(self, value, name=None):
        self.value = np.array(value)

    def init(self, var, block):
        if tuple(self.value.shape) != tuple(var.shape):
            raise located(AttrError, f"Assign initializer for {var.name!r}: value has shape {list(self.value.shape)}, "
                             f"the parameter has shape {list(var.shape)}")
        values = self.value.astype(convert_dtype(var.dtype).numpy).ravel().tolist()
        return self._append(block, "assign_value", var, {"values": values})


# fluid-era names
ConstantInitializer = Constant
UniformInitializer = Uniform
NormalInitializer = Normal
TruncatedNormalInitializer = TruncatedNormal
Xavier = XavierInitializer
MSRA = MSRAInitializer
NumpyArrayInitializer = Assign
