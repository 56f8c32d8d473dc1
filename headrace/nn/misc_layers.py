"""``paddle.nn``: ``Identity``, channel and alpha dropout layers, ``PixelShuffle``,
``PixelUnshuffle``, ``ChannelShuffle``, ``Unflatten`` and ``Bilinear`` (both modes, on the
``nn.functional`` forms of functional_misc.py)."""
from __future__ import annotations

import numbers

from ..core.errors import ArgTypeError, AttrError, located
from . import functional_misc as FM
from .layer import Layer
from .param_attr import ParamAttr
from .tensor import reshape


class Identity(Layer):
    """Returns its input; constructor arguments are accepted and ignored (as the reference)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002  (the reference's argument name)
        return input


class _Dropout(Layer):
    _func = None

    def __init__(self, p=0.5, data_format=None, name=None):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise located(AttrError, f"{type(self).__name__}: p must be a number in [0, 1], got {p!r}")
        self.p, self._data_format, self._name = p, data_format, name

    def forward(self, x):
        kwargs = {} if self._data_format is None else {"data_format": self._data_format}
        return type(self)._func(x, self.p, training=self.training, name=self._name, **kwargs)

    def extra_repr(self):
        return f"p={self.p}" + ("" if self._data_format is None else f", data_format={self._data_format}")


class Dropout2D(_Dropout):
    """Drop whole channels of [N, C, H, W] with probability ``p`` while training."""
    _func = FM.dropout2d

    def __init__(self, p=0.5, data_format="NCHW", name=None):
        super().__init__(p, data_format, name)


class Dropout3D(_Dropout):
    """Drop whole channels of [N, C, D, H, W] with probability ``p`` while training."""
    _func = FM.dropout3d

    def __init__(self, p=0.5, data_format="NCDHW", name=None):
        super().__init__(p, data_format, name)


class AlphaDropout(_Dropout):
    """Alpha dropout (keeps SELU's self-normalization) while training."""
    _func = FM.alpha_dropout

    def __init__(self, p=0.5, name=None):
        super().__init__(p, None, name)


class FeatureAlphaDropout(_Dropout):
    """Alpha dropout of whole channels while training."""
    _func = FM.feature_alpha_dropout

    def __init__(self, p=0.5, name=None):
        super().__init__(p, None, name)


class PixelShuffle(Layer):
    """[N, C * r * r, H, W] -> [N, C, H * r, W * r]."""

    def __init__(self, upscale_factor, data_format="NCHW", name=None):
        super().__init__()
        self._factor, self._data_format, self._name = upscale_factor, data_format, name

    def forward(self, x):
        return FM.pixel_shuffle(x, self._factor, self._data_format, self._name)

    def extra_repr(self):
        return f"upscale_factor={self._factor}"


class PixelUnshuffle(Layer):
    """[N, C, H * r, W * r] -> [N, C * r * r, H, W]."""

    def __init__(self, downscale_factor, data_format="NCHW", name=None):
        super().__init__()
        self._factor, self._data_format, self._name = downscale_factor, data_format, name

    def forward(self, x):
        return FM.pixel_unshuffle(x, self._factor, self._data_format, self._name)

    def extra_repr(self):
        return f"downscale_factor={self._factor}"


class ChannelShuffle(Layer):
    """Interleave ``groups`` groups of channels."""

    def __init__(self, groups, data_format="NCHW", name=None):
        super().__init__()
        self._groups, self._data_format, self._name = groups, data_format, name

    def forward(self, x):
        return FM.channel_shuffle(x, self._groups, self._data_format, self._name)

    def extra_repr(self):
        return f"groups={self._groups}"


class Unflatten(Layer):
    """Split dim ``axis`` into ``shape`` (whose product must be that dim's size)."""

    def __init__(self, axis, shape, name=None):
        super().__init__()
        if not isinstance(shape, (list, tuple)) or not shape:
            raise located(ArgTypeError, f"Unflatten: shape must be a non-empty list or tuple, got {shape!r}")
        self._axis, self._shape, self._name = int(axis), [int(s) for s in shape], name

    def forward(self, x):
        rank = len(x.shape)
        axis = self._axis + rank if self._axis < 0 else self._axis
        if not 0 <= axis < rank:
            raise located(AttrError, f"Unflatten: axis {self._axis} out of range for an input of rank {rank}")
        new = [0] * axis + self._shape + [0] * (rank - axis - 1)
        # 0 copies a dim only at the same position: name the trailing dims explicitly
        new = new[:axis + len(self._shape)] + [int(d) for d in x.shape[axis + 1:]]
        return reshape(x, new, self._name)

    def extra_repr(self):
        return f"axis={self._axis}, shape={self._shape}"


class Bilinear(Layer):
    """``out = x1 @ weight[o] @ x2 + bias``: weight [out, in1, in2], bias [1, out]."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        for what, value in (("in1_features", in1_features), ("in2_features", in2_features),
                            ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise located(AttrError, f"Bilinear: {what} must be a positive int, got {value!r}")
        self._sizes, self._name = (in1_features, in2_features, out_features), name
        self.weight = self.create_parameter([out_features, in1_features, in2_features], weight_attr)
        self.bias = (None if ParamAttr.to_attr(bias_attr) is False else
                     self.create_parameter([1, out_features], bias_attr, is_bias=True))

    def forward(self, x1, x2):
        return FM.bilinear(x1, x2, self.weight, self.bias, self._name)

    def extra_repr(self):
        return "in1_features={}, in2_features={}, out_features={}".format(*self._sizes)


class Unfold(Layer):
    """Sliding blocks as columns (``F.unfold``): [N, C, H, W] -> [N, C * kh * kw, L]."""

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._config = dict(kernel_sizes=kernel_sizes, dilations=dilations, paddings=paddings, strides=strides,
                            name=name)

    def forward(self, input):  # noqa: A002  (the reference's argument name)
        return FM.unfold(input, **self._config)


class Fold(Layer):
    """Columns back to an image, overlaps summed (``F.fold``): [N, C * kh * kw, L] -> [N, C, H, W]."""

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self._config = dict(output_sizes=output_sizes, kernel_sizes=kernel_sizes, dilations=dilations,
                            paddings=paddings, strides=strides, name=name)

    def forward(self, input):  # noqa: A002  (the reference's argument name)
        return FM.fold(input, **self._config)
