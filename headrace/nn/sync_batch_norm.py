"""``paddle.nn.SyncBatchNorm``: batch normalisation whose batch statistics cover every rank.

In a multi-process run (``paddle.distributed.init_parallel_env``) the op ``sync_batch_norm``
all-reduces the per-channel sums of the forward and of the backward, so every rank normalises
with the mean and variance of the global batch: N ranks on slices of a batch give what one
``BatchNorm`` gives on the whole batch.  In a group of one it equals ``BatchNorm``.
``SyncBatchNorm.convert_sync_batchnorm(layer)`` replaces every batch-norm sublayer (keeping its
parameters and statistics).
"""
from __future__ import annotations

from ..ops.apply import apply_op
from .layer import Layer
from .layers import _BatchNormBase
from .tensor import _key

_LAYOUTS = {"NC": "NCHW", "NCL": "NCHW", "NCHW": "NCHW", "NCDHW": "NCHW", "NHWC": "NHWC", "NLC": "NHWC",
            "NDHWC": "NHWC"}


class SyncBatchNorm(_BatchNormBase):
    """``SyncBatchNorm(num_features, momentum=0.9, epsilon=1e-5, weight_attr=None, bias_attr=None,
    data_format='NCHW', name=None)``."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None):
        if data_format not in _LAYOUTS:
            raise ValueError(f"SyncBatchNorm: unsupported data_format {data_format!r}")
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, None, name)

    def forward(self, x):
        outs = apply_op("sync_batch_norm", {"X": x, "Scale": self.weight, "Bias": self.bias, "Mean": self._mean,
                                            "Variance": self._variance},
                        {"momentum": float(self._momentum), "epsilon": float(self._epsilon),
                         "is_test": not self.training, "data_layout": _LAYOUTS[self._data_format],
                         "use_global_stats": False},
                        outputs={"MeanOut": self._mean, "VarianceOut": self._variance},
                        name_key=_key("sync_batch_norm", self._name))
        return outs["Y"][0]

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """``layer`` with every batch-norm sublayer (and itself, if one) made a ``SyncBatchNorm``
        that shares the original's parameters and running statistics."""
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            converted = cls.__new__(cls)
            Layer.__init__(converted)
            for attr in ("_momentum", "_epsilon", "_data_format", "_name", "training"):
                object.__setattr__(converted, attr, getattr(layer, attr))
            if converted._data_format not in _LAYOUTS:
                raise ValueError(f"SyncBatchNorm: unsupported data_format {converted._data_format!r}")
            converted._use_global_stats = None
            for name in ("weight", "bias", "_mean", "_variance"):
                setattr(converted, name, getattr(layer, name))
            return converted
        for name, sub in list(layer._sub_layers.items()):
            layer._sub_layers[name] = cls.convert_sync_batchnorm(sub)
        return layer
