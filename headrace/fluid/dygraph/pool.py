"""``fluid.dygraph.Pool2D``: the 1.x pooling layer class (op ``pool2d``, as ``fluid.layers.pool2d``)."""
from __future__ import annotations

from ...nn import functional as F
from ...nn.layer import Layer


class Pool2D(Layer):
    """``Pool2D(pool_size=-1, pool_type='max', pool_stride=1, pool_padding=0, global_pooling=False,
    use_cudnn=True, ceil_mode=False, exclusive=True, data_format='NCHW')``."""

    def __init__(self, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
                 use_cudnn=True, ceil_mode=False, exclusive=True, data_format="NCHW"):
        super().__init__("pool2d")
        if pool_type not in ("max", "avg"):
            raise ValueError(f"Pool2D: pool_type must be 'max' or 'avg', got {pool_type!r}")
        self._args = dict(pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                          pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn,
                          ceil_mode=ceil_mode, exclusive=exclusive, data_format=data_format)

    def forward(self, input):  # noqa: A002
        return F.pool2d(input, **self._args)
