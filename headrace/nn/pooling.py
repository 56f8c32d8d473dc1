"""The ``paddle.nn`` pooling layers (1-D and 2-D, plain and adaptive): each holds its arguments
and runs the ``nn.functional`` form (both modes).  Arguments and defaults are the reference's."""
from __future__ import annotations

from . import functional_pooling as FP
from .layer import Layer


class _Pool(Layer):
    _func = None
    _repr = ()

    def __init__(self, **config):
        super().__init__()
        self._config = config

    def forward(self, x):
        return type(self)._func(x, **self._config)

    def extra_repr(self):
        return ", ".join(f"{k}={self._config[k]}" for k in self._repr)


class MaxPool1D(_Pool):
    """Max pooling over [N, C, L]."""
    _func, _repr = FP.max_pool1d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, return_mask=return_mask,
                         ceil_mode=ceil_mode, name=name)


class MaxPool2D(_Pool):
    """Max pooling over [N, C, H, W] (or NHWC)."""
    _func, _repr = FP.max_pool2d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, return_mask=False,
                 data_format="NCHW", name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         return_mask=return_mask, data_format=data_format, name=name)


class AvgPool1D(_Pool):
    """Average pooling over [N, C, L]."""
    _func, _repr = FP.avg_pool1d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, exclusive=exclusive,
                         ceil_mode=ceil_mode, name=name)


class AvgPool2D(_Pool):
    """Average pooling over [N, C, H, W] (or NHWC)."""
    _func, _repr = FP.avg_pool2d, ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True,
                 divisor_override=None, data_format="NCHW", name=None):
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         exclusive=exclusive, divisor_override=divisor_override, data_format=data_format,
                         name=name)


class AdaptiveAvgPool1D(_Pool):
    """Adaptive average pooling of [N, C, L] to ``output_size``."""
    _func, _repr = FP.adaptive_avg_pool1d, ("output_size",)

    def __init__(self, output_size, name=None):
        super().__init__(output_size=output_size, name=name)


class AdaptiveAvgPool2D(_Pool):
    """Adaptive average pooling of [N, C, H, W] to ``output_size``."""
    _func, _repr = FP.adaptive_avg_pool2d, ("output_size",)

    def __init__(self, output_size, data_format="NCHW", name=None):
        super().__init__(output_size=output_size, data_format=data_format, name=name)


class AdaptiveMaxPool1D(_Pool):
    """Adaptive max pooling of [N, C, L] to ``output_size``."""
    _func, _repr = FP.adaptive_max_pool1d, ("output_size",)

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__(output_size=output_size, return_mask=return_mask, name=name)


class AdaptiveMaxPool2D(_Pool):
    """Adaptive max pooling of [N, C, H, W] to ``output_size``."""
    _func, _repr = FP.adaptive_max_pool2d, ("output_size",)

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__(output_size=output_size, return_mask=return_mask, name=name)


class MaxUnPool1D(Layer):
    """Inverse of ``MaxPool1D(return_mask=True)``: ``forward(x, indices)``."""

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
        super().__init__()
        self._config = dict(kernel_size=kernel_size, stride=stride, padding=padding, data_format=data_format,
                            output_size=output_size, name=name)

    def forward(self, x, indices):
        return FP.max_unpool1d(x, indices, **self._config)


class MaxUnPool2D(Layer):
    """Inverse of ``MaxPool2D(return_mask=True)``: ``forward(x, indices)``."""

    def __init__(self, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
        super().__init__()
        self._config = dict(kernel_size=kernel_size, stride=stride, padding=padding, data_format=data_format,
                            output_size=output_size, name=name)

    def forward(self, x, indices):
        return FP.max_unpool2d(x, indices, **self._config)


class LPPool1D(_Pool):
    """Power-average pooling over [N, C, L]."""
    _func, _repr = FP.lp_pool1d, ("norm_type", "kernel_size", "stride", "padding")

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL",
                 name=None):
        super().__init__(norm_type=norm_type, kernel_size=kernel_size, stride=stride, padding=padding,
                         ceil_mode=ceil_mode, data_format=data_format, name=name)


class LPPool2D(_Pool):
    """Power-average pooling over [N, C, H, W] (or NHWC)."""
    _func, _repr = FP.lp_pool2d, ("norm_type", "kernel_size", "stride", "padding")

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW",
                 name=None):
        super().__init__(norm_type=norm_type, kernel_size=kernel_size, stride=stride, padding=padding,
                         ceil_mode=ceil_mode, data_format=data_format, name=name)


AdaptiveMaxPool1d = AdaptiveMaxPool1D
LPPool1d, LPPool2d = LPPool1D, LPPool2D
AdaptiveMaxPool2d = AdaptiveMaxPool2D
