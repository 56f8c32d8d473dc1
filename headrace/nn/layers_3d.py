"""``paddle.nn`` 3-D layers: ``Conv3D``, ``Conv3DTranspose`` (parameters as Conv1D/Conv2DTranspose
in conv_layers.py) and ``MaxPool3D``, ``AvgPool3D``, ``AdaptiveAvgPool3D``, ``AdaptiveMaxPool3D``."""
from __future__ import annotations

from . import functional_3d as F3
from .conv_layers import _ConvBase
from .layer import Layer
from .pooling import _Pool


class Conv3D(_ConvBase):
    """3-D convolution over [N, C, D, H, W] (or NDHWC); weight [out, in / groups, kd, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__("Conv3D", in_channels, out_channels, kernel_size, 3, False, weight_attr, bias_attr,
                         groups, padding_mode)
        self._stride, self._padding, self._dilation, self._data_format = stride, padding, dilation, data_format

    def forward(self, x):
        return F3.conv3d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups,
                         self._data_format)


class Conv3DTranspose(_ConvBase):
    """Transposed 3-D convolution; weight [in, out / groups, kd, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__("Conv3DTranspose", in_channels, out_channels, kernel_size, 3, True, weight_attr, bias_attr,
                         groups)
        self._stride, self._padding, self._output_padding = stride, padding, output_padding
        self._dilation, self._data_format = dilation, data_format

    def forward(self, x, output_size=None):
        return F3.conv3d_transpose(x, self.weight, self.bias, self._stride, self._padding, self._output_padding,
                                   self._groups, self._dilation, output_size, self._data_format)


class MaxPool3D(_Pool):
    """Max pooling over D, H and W."""
    _func, _repr = F3.max_pool3d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False,
                 data_format="NCDHW", name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         return_mask=return_mask, data_format=data_format, name=name)


class AvgPool3D(_Pool):
    """Average pooling over D, H and W."""
    _func, _repr = F3.avg_pool3d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCDHW", name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         exclusive=exclusive, divisor_override=divisor_override, data_format=data_format, name=name)


class AdaptiveAvgPool3D(_Pool):
    """Adaptive average pooling of [N, C, D, H, W] to ``output_size``."""
    _func, _repr = F3.adaptive_avg_pool3d, ("output_size",)

    def __init__(self, output_size, data_format="NCDHW", name=None):
        super().__init__(output_size=output_size, data_format=data_format, name=name)


class AdaptiveMaxPool3D(_Pool):
    """Adaptive max pooling of [N, C, D, H, W] to ``output_size``."""
    _func, _repr = F3.adaptive_max_pool3d, ("output_size",)

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__(output_size=output_size, return_mask=return_mask, name=name)


class MaxUnPool3D(Layer):
    """Inverse of ``MaxPool3D(return_mask=True)``: ``forward(x, indices)``."""

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
        super().__init__()
        self._config = dict(kernel_size=kernel_size, stride=stride, padding=padding, data_format=data_format,
                            output_size=output_size, name=name)

    def forward(self, x, indices):
        return F3.max_unpool3d(x, indices, **self._config)


AdaptiveMaxPool3d = AdaptiveMaxPool3D
Conv3d = Conv3D
