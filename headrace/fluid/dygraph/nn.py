"""``paddle.fluid.dygraph.nn``: the 1.x dygraph layer classes and argument orders over ``headrace.nn``."""
from __future__ import annotations

from ...nn import functional as F
from ...nn import layers as _L
from ...nn.initializer import Normal
from ...nn.layer import Layer
from ...nn.param_attr import ParamAttr
from ...core.errors import AttrError, located


def _act(x, act):
    if act is None:
        return x
    if not isinstance(act, str) or not hasattr(F, act):
        raise located(AttrError, f"unknown activation {act!r}")
    return getattr(F, act)(x)


class Linear(Layer):
    """``fluid.dygraph.Linear(input_dim, output_dim, param_attr, bias_attr, act, dtype)``: weight
    [input_dim, output_dim]."""

    def __init__(self, input_dim, output_dim, param_attr=None, bias_attr=None, act=None, dtype="float32"):
        super().__init__("linear", dtype)
        self._act = act
        self.weight = self.create_parameter([int(input_dim), int(output_dim)], param_attr)
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([int(output_dim)], bias_attr, is_bias=True))

    def forward(self, input):  # noqa: A002  (the 1.x argument name)
        return _act(F.linear(input, self.weight, self.bias), self._act)


class Embedding(Layer):
    """``fluid.dygraph.Embedding(size=[vocab, dim], is_sparse, is_distributed, padding_idx, param_attr,
    dtype)``."""

    def __init__(self, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                 dtype="float32"):
        super().__init__("embedding", dtype)
        if len(size) != 2:
            raise located(AttrError, f"Embedding: size must be [vocab_size, embedding_dim], got {size}")
        self._size, self._is_sparse, self._padding_idx = [int(s) for s in size], is_sparse, padding_idx
        self.weight = self.create_parameter(self._size, param_attr)

    def forward(self, input):  # noqa: A002
        return F.embedding(input, self.weight, self._padding_idx, self._is_sparse)


class Conv2D(Layer):
    """``fluid.dygraph.Conv2D(num_channels, num_filters, filter_size, stride, padding, dilation, groups,
    param_attr, bias_attr, use_cudnn, act, dtype)``."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
                 param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        super().__init__("conv2d", dtype)
        groups = 1 if groups is None else int(groups)
        kh, kw = _L._pair(filter_size, "filter_size", "Conv2D")
        self._args = (stride, padding, dilation, groups)
        self._act = act
        std = (2.0 / (kh * kw * num_channels)) ** 0.5
        self.weight = self.create_parameter([num_filters, num_channels // groups, kh, kw], param_attr,
                                            default_initializer=Normal(0.0, std))
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([num_filters], bias_attr, is_bias=True))

    def forward(self, input):  # noqa: A002
        return _act(F.conv2d(input, self.weight, self.bias, *self._args), self._act)


BatchNorm = _L.BatchNorm


class LayerNorm(_L.LayerNorm):
    """``fluid.dygraph.LayerNorm(normalized_shape, scale, shift, epsilon, param_attr, bias_attr, act)``."""

    def __init__(self, normalized_shape, scale=True, shift=True, epsilon=1e-05, param_attr=None, bias_attr=None,
                 act=None, dtype="float32"):
        super().__init__(normalized_shape, epsilon, param_attr if scale else False, bias_attr if shift else False)
        self._act = act

    def forward(self, input):  # noqa: A002
        return _act(super().forward(input), self._act)


class Dropout(_L.Dropout):
    def __init__(self, p=0.5, seed=None, dropout_implementation="downgrade_in_infer", is_test=False):
        mode = "upscale_in_train" if dropout_implementation == "upscale_in_train" else "downscale_in_infer"
        super().__init__(p, mode=mode)
        if is_test:
            self.training = False


__all__ = ["BatchNorm", "Conv2D", "Dropout", "Embedding", "LayerNorm", "Linear"]
