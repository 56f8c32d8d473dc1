"""The ``paddle.nn`` layer classes, written once for both modes on ``nn.functional``.

Parameter shapes and default initializers follow the reference: ``Linear`` weight [in, out]
(Xavier), bias [out] (zeros); ``Conv2D`` weight [out, in / groups, kh, kw] (Normal(0, sqrt(2 /
(kh * kw * in)))); ``Embedding`` weight [num, dim] (Xavier); ``BatchNorm*`` weight ones, bias
zeros and the running mean (zeros) / variance (ones) as non-trainable parameters; ``LayerNorm``
weight ones, bias zeros.
"""
from __future__ import annotations

import collections
import numbers

from ..core.dtypes import convert_dtype
from . import functional as F
from .initializer import Constant, Normal
from .layer import Layer
from .param_attr import ParamAttr
from ..core.errors import ArgTypeError, AttrError, located


def _pair(value, what, layer, minimum=1):
    """An int or a pair of ints, each >= ``minimum``."""
    pair = [value, value] if isinstance(value, numbers.Integral) else \
        list(value) if isinstance(value, (list, tuple)) else None
    if pair is None or len(pair) != 2 or not all(isinstance(v, numbers.Integral) for v in pair):
        raise located(AttrError, f"{layer}: {what} must be an int or a pair of ints, got {value!r}")
    if min(pair) < minimum:
        raise located(AttrError, f"{layer}: {what} must be >= {minimum}, got {value!r}")
    return [int(v) for v in pair]


class Linear(Layer):
    """``y = x @ weight + bias`` with weight [in_features, out_features]; ``bias_attr=False`` for none."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        for arg, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise located(AttrError, f"Linear: {arg} must be a positive int, got {value!r}")
        self._in_features, self._out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter([self._in_features, self._out_features], weight_attr)
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([self._out_features], bias_attr, is_bias=True))
        self._name = name

    def forward(self, x):
        return F.linear(x, self.weight, self.bias, self._name)

    def extra_repr(self):
        return f"in_features={self._in_features}, out_features={self._out_features}, dtype={self._dtype}"


class Sequential(Layer):
    """Layers run in order; give them as ``Sequential(a, b)`` or ``Sequential(("name", a), ...)``."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (list, tuple, collections.OrderedDict)) and \
                not isinstance(layers[0], Layer) and not _is_pair(layers[0]):
            layers = tuple(layers[0].items()) if isinstance(layers[0], dict) else tuple(layers[0])
        for index, item in enumerate(layers):
            if _is_pair(item):
                self.add_sublayer(item[0], item[1])
            else:
                self.add_sublayer(str(index), item)

    def __getitem__(self, index):
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


def _is_pair(item) -> bool:
    return isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str) \
        and isinstance(item[1], Layer)


class Dropout(Layer):
    """Zero each element with probability ``p`` while training (``mode`` as ``F.dropout``)."""

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        if not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise located(AttrError, f"Dropout: p must be a number in [0, 1], got {p!r}")
        self.p, self.axis, self.mode, self._name = p, axis, mode, name

    def forward(self, x):
        return F.dropout(x, self.p, self.axis, self.training, self.mode, self._name)

    def extra_repr(self):
        return f"p={self.p}, axis={self.axis}, mode={self.mode}"


def _activation(class_name, func, **defaults):
    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        params = dict(defaults)
        for key, value in zip(defaults, args):
            params[key] = value
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise located(ArgTypeError, f"{class_name}() got unexpected keyword arguments {sorted(unknown)}")
        params.update(kwargs)
        self._params = params
        self._name = name

    def forward(self, x):
        return func(x, **self._params, name=self._name)

    return type(class_name, (Layer,), {"__init__": __init__, "forward": forward,
                                       "__doc__": f"Layer form of ``F.{func.__name__}``."})


ReLU = _activation("ReLU", F.relu)
Sigmoid = _activation("Sigmoid", F.sigmoid)
Tanh = _activation("Tanh", F.tanh)
GELU = _activation("GELU", F.gelu, approximate=False)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, negative_slope=0.01)
Softmax = _activation("Softmax", F.softmax, axis=-1)


class Embedding(Layer):
    """A [num_embeddings, embedding_dim] table looked up by integer ids (op ``lookup_table_v2``)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None,
                 name=None):
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise located(AttrError, f"Embedding: sizes must be positive, got [{num_embeddings}, {embedding_dim}]")
        self._num_embeddings, self._embedding_dim = int(num_embeddings), int(embedding_dim)
        self._padding_idx, self._sparse, self._name = padding_idx, sparse, name
        self.weight = self.create_parameter([self._num_embeddings, self._embedding_dim], weight_attr)

    def forward(self, x):
        return F.embedding(x, self.weight, self._padding_idx, self._sparse, self._name)


class Conv2D(Layer):
    """2-D convolution, NCHW (or NHWC) input, weight [out, in / groups, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        if padding_mode != "zeros":
            raise located(AttrError, f"Conv2D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if not isinstance(value, numbers.Integral) or value <= 0:
                raise located(AttrError, f"Conv2D: {arg} must be a positive int, got {value!r}")
        _pair(stride, "stride", "Conv2D")
        _pair(dilation, "dilation", "Conv2D")
        if isinstance(padding, (numbers.Integral, list, tuple)) and not isinstance(padding, str):
            pads = [padding] if isinstance(padding, numbers.Integral) else list(padding)
            if not all(isinstance(p, numbers.Integral) and p >= 0 for p in pads):
                raise located(AttrError, f"Conv2D: padding must be ints >= 0, got {padding!r}")
        if in_channels % groups or out_channels % groups:
            raise located(AttrError, f"Conv2D: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        kh, kw = _pair(kernel_size, "kernel_size", "Conv2D")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._groups, self._data_format = int(groups), data_format
        std = (2.0 / (kh * kw * in_channels)) ** 0.5
        self.weight = self.create_parameter([out_channels, in_channels // groups, kh, kw], weight_attr,
                                            default_initializer=Normal(0.0, std))
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([out_channels], bias_attr, is_bias=True))

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                        self._data_format)


class _BatchNormBase(Layer):
    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", use_global_stats=None, name=None, dtype="float32"):
        super().__init__(dtype=dtype)
        self._momentum, self._epsilon = momentum, epsilon
        self._data_format, self._use_global_stats, self._name = data_format, use_global_stats, name
        dtype = "float32" if convert_dtype(dtype) == "float16" else dtype
        self.weight = self.create_parameter([num_features], weight_attr, dtype,
                                            default_initializer=Constant(1.0))
        self.bias = self.create_parameter([num_features], bias_attr, dtype, is_bias=True)
        self._mean = self.create_parameter([num_features], ParamAttr(initializer=Constant(0.0), trainable=False),
                                           dtype)
        self._variance = self.create_parameter([num_features], ParamAttr(initializer=Constant(1.0),
                                                                         trainable=False), dtype)

    def forward(self, x):
        return F.batch_norm(x, self._mean, self._variance, self.weight, self.bias, self.training,
                            self._momentum, self._epsilon, self._data_format, self._use_global_stats)


class BatchNorm1D(_BatchNormBase):
    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name)


class BatchNorm2D(_BatchNormBase):
    pass


class BatchNorm(_BatchNormBase):
    """The fluid-style ``BatchNorm(num_channels, act=None, is_test=False, ...)``."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True,
                 use_global_stats=False, trainable_statistics=False):
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout,
                         use_global_stats, dtype=dtype)
        self._act = act
        if is_test:
            self.training = False

    def forward(self, x):
        y = super().forward(x)
        return y if self._act is None else getattr(F, self._act)(y)


class LayerNorm(Layer):
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""

    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        shape = [int(normalized_shape)] if isinstance(normalized_shape, numbers.Integral) else list(normalized_shape)
        self._shape, self._epsilon, self._name = shape, epsilon, name
        size = 1
        for d in shape:
            size *= d
        self.weight = (None if ParamAttr.to_attr(weight_attr) is False else
                       self.create_parameter([size], weight_attr, default_initializer=Constant(1.0)))
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([size], bias_attr, is_bias=True))

    def forward(self, x):
        return F.layer_norm(x, self._shape, self.weight, self.bias, self._epsilon, self._name)


class Flatten(Layer):
    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self._start, self._stop = start_axis, stop_axis

    def forward(self, x):
        from .tensor import flatten

        return flatten(x, self._start, self._stop)
