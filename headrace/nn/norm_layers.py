"""``paddle.nn`` normalization layers beyond BatchNorm/LayerNorm: ``GroupNorm``,
``InstanceNorm1D/2D/3D``, ``LocalResponseNorm`` and ``BatchNorm3D`` (both modes).

Parameters as the reference: GroupNorm ``weight`` (ones) and ``bias`` (zeros) of [num_channels];
InstanceNorm ``scale`` (ones) and ``bias`` (zeros) of [num_features], both absent when
``weight_attr=False`` and ``bias_attr=False``.
"""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, located
from . import functional_norm as FN
from ..ops.apply import apply_op_single
from .initializer import Constant, Normal
from .layer import Layer
from .layers import _BatchNormBase
from .param_attr import ParamAttr
from .tensor import _key


def _positive(layer, what, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise located(AttrError, f"{layer}: {what} must be a positive int, got {value!r}")
    return int(value)


class GroupNorm(Layer):
    """Group normalization over ``num_groups`` groups of ``num_channels`` channels."""

    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        super().__init__()
        self._num_groups = _positive("GroupNorm", "num_groups", num_groups)
        self._num_channels = _positive("GroupNorm", "num_channels", num_channels)
        if self._num_channels % self._num_groups:
            raise located(AttrError, f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self._epsilon, self._data_format, self._name = epsilon, data_format, name
        self.weight = (None if ParamAttr.to_attr(weight_attr) is False else
                       self.create_parameter([self._num_channels], weight_attr, default_initializer=Constant(1.0)))
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([self._num_channels], bias_attr, is_bias=True))

    def forward(self, x):
        return FN.group_norm(x, self._num_groups, self._epsilon, self.weight, self.bias, self._data_format,
                             self._name)

    def extra_repr(self):
        return f"num_groups={self._num_groups}, num_channels={self._num_channels}, epsilon={self._epsilon}"


class _InstanceNorm(Layer):
    _default_format = "NCHW"

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format=None, name=None):
        super().__init__()
        self._num_features = _positive(type(self).__name__, "num_features", num_features)
        self._epsilon, self._momentum, self._name = epsilon, momentum, name
        self._data_format = data_format or self._default_format
        if (ParamAttr.to_attr(weight_attr) is False) != (ParamAttr.to_attr(bias_attr) is False):
            raise located(AttrError, f"{type(self).__name__}: weight_attr and bias_attr must be False together")
        if ParamAttr.to_attr(weight_attr) is False:
            self.scale, self.bias = None, None
        else:
            self.scale = self.create_parameter([self._num_features], weight_attr, default_initializer=Constant(1.0))
            self.bias = self.create_parameter([self._num_features], bias_attr, is_bias=True)

    def forward(self, x):
        return FN.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon,
                                data_format=self._data_format, name=self._name)

    def extra_repr(self):
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNorm):
    """Instance normalization of [N, C, L]."""
    _default_format = "NCL"


class InstanceNorm2D(_InstanceNorm):
    """Instance normalization of [N, C, H, W]."""
    _default_format = "NCHW"


class InstanceNorm3D(_InstanceNorm):
    """Instance normalization of [N, C, D, H, W]."""
    _default_format = "NCDHW"


class LocalResponseNorm(Layer):
    """Local response normalization across channels (``F.local_response_norm``)."""

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
        super().__init__()
        self._size, self._alpha, self._beta, self._k = size, alpha, beta, k
        self._data_format, self._name = data_format, name

    def forward(self, x):
        return FN.local_response_norm(x, self._size, self._alpha, self._beta, self._k, self._data_format,
                                      self._name)

    def extra_repr(self):
        return f"size={self._size}, alpha={self._alpha}, beta={self._beta}, k={self._k}"


class BatchNorm3D(_BatchNormBase):
    """Batch normalization of [N, C, D, H, W] (or NDHWC)."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)


class SpectralNorm(Layer):
    """``forward(weight)``: ``weight`` divided by its spectral norm, estimated by ``power_iters``
    rounds of power iteration from the fixed random vectors ``weight_u`` [H] and ``weight_v`` [W]
    (non-trainable parameters drawn from N(0, 1); H = ``weight_shape[dim]``, W the product of the
    other dims), op ``spectral_norm``."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, name=None, dtype="float32"):
        super().__init__(dtype=dtype)
        shape = [int(d) for d in weight_shape]
        if not 0 <= dim < len(shape) or len(shape) < 2:
            raise located(AttrError, f"SpectralNorm: dim must be an axis of the weight shape {shape}, got {dim}")
        self._shape, self._dim, self._power_iters, self._eps = shape, int(dim), int(power_iters), float(eps)
        rows = shape[dim]
        cols = 1
        for i, d in enumerate(shape):
            cols *= d if i != dim else 1
        fixed = ParamAttr(initializer=Normal(0.0, 1.0), trainable=False)
        self.weight_u = self.create_parameter([rows], fixed, dtype)
        self.weight_v = self.create_parameter([cols], ParamAttr(initializer=Normal(0.0, 1.0), trainable=False), dtype)

    def forward(self, x):
        return apply_op_single("spectral_norm", {"Weight": x, "U": self.weight_u, "V": self.weight_v},
                               {"dim": self._dim, "power_iters": self._power_iters, "eps": self._eps},
                               name_key=_key("spectral_norm"))

    def extra_repr(self):
        return f"weight_shape={self._shape}, dim={self._dim}, power_iters={self._power_iters}"
