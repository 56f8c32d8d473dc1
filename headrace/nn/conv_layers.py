"""``paddle.nn.Conv1D``, ``Conv1DTranspose`` and ``Conv2DTranspose`` (both modes).

Parameters as the reference: Conv1D weight [out, in / groups, k] with Normal(0, sqrt(2 / (k *
in))); the transposed convolutions' weight [in, out / groups, *k] with the default (Xavier)
initializer; bias [out] (zeros) unless ``bias_attr=False``.  ``forward(x, output_size=None)``
of the transposed layers passes ``output_size`` on.
"""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, located
from . import functional_conv as FC
from .initializer import Normal
from .layer import Layer
from .param_attr import ParamAttr


def _kernel(value, n, layer):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)] * n
    value = [int(v) for v in value]
    if len(value) != n or any(v <= 0 for v in value):
        raise located(AttrError, f"{layer}: kernel_size must be a positive int or {n} of them, got {value}")
    return value


def _check_channels(layer, in_channels, out_channels, groups):
    for what, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
            raise located(AttrError, f"{layer}: {what} must be a positive int, got {value!r}")
    if in_channels % groups or out_channels % groups:
        raise located(AttrError, f"{layer}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                         f"divisible by groups ({groups})")


class _ConvBase(Layer):
    def __init__(self, layer, in_channels, out_channels, kernel_size, n, transposed, weight_attr, bias_attr,
                 groups, padding_mode="zeros"):
        super().__init__()
        _check_channels(layer, in_channels, out_channels, groups)
        self._groups = int(groups)
        if padding_mode != "zeros":
            raise located(AttrError, f"{layer}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        self._kernel_size = _kernel(kernel_size, n, layer)
        shape = ([in_channels, out_channels // self._groups] if transposed
                 else [out_channels, in_channels // self._groups]) + self._kernel_size
        fan_in = in_channels
        for k in self._kernel_size:
            fan_in *= k
        init = None if transposed else Normal(0.0, (2.0 / fan_in) ** 0.5)
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=init)
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([out_channels], bias_attr, is_bias=True))
        self._in_channels, self._out_channels = in_channels, out_channels

    def extra_repr(self):
        return (f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}, "
                f"stride={self._stride}, padding={self._padding}, data_format={self._data_format}")


class Conv1D(_ConvBase):
    """1-D convolution over [N, C, L] (or NLC)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__("Conv1D", in_channels, out_channels, kernel_size, 1, False, weight_attr, bias_attr,
                         groups, padding_mode)
        self._stride, self._padding, self._dilation, self._data_format = stride, padding, dilation, data_format

    def forward(self, x):
        return FC.conv1d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                         self._data_format)


class _ConvTranspose(_ConvBase):
    def __init__(self, layer, n, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
                 dilation, weight_attr, bias_attr, data_format):
        super().__init__(layer, in_channels, out_channels, kernel_size, n, True, weight_attr, bias_attr, groups)
        self._stride, self._padding, self._output_padding = stride, padding, output_padding
        self._dilation, self._data_format = dilation, data_format


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution over [N, C, H, W] (or NHWC)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__("Conv2DTranspose", 2, in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, dilation, weight_attr, bias_attr, data_format)

    def forward(self, x, output_size=None):
        return FC.conv2d_transpose(x, self.weight, self.bias, self._stride, self._padding, self._output_padding,
                                   self._dilation, self._groups, output_size, self._data_format)


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution over [N, C, L] (or NLC)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__("Conv1DTranspose", 1, in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, dilation, weight_attr, bias_attr, data_format)

    def forward(self, x, output_size=None):
        return FC.conv1d_transpose(x, self.weight, self.bias, self._stride, self._padding, self._output_padding,
                                   self._groups, self._dilation, output_size, self._data_format)
