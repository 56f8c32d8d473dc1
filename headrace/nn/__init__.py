"""``paddle.nn``: layers (both modes), functional ops, parameters and initializers."""
from . import functional, initializer  # noqa: F401
from . import operators, tensor_methods  # noqa: F401  (bind x + y ... and x.mean(), x[...] onto Tensor/Variable)
from .layer import Layer
from .layers import (GELU, BatchNorm, BatchNorm1D, BatchNorm2D, Conv2D, Dropout, Embedding, Flatten,
                     LayerNorm, LeakyReLU, Linear, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .param_attr import ParamAttr
from ..optimizer.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GELU", "BatchNorm", "BatchNorm1D", "BatchNorm2D", "Conv2D", "Dropout", "Embedding", "Flatten",
           "LayerNorm", "Layer", "LeakyReLU", "Linear", "ParamAttr", "ReLU", "Sequential", "Sigmoid",
           "Softmax", "Tanh", "functional", "initializer"]
from .sync_batch_norm import SyncBatchNorm  # noqa: E402  (multi-process: issue 19)

__all__ += ["SyncBatchNorm"]
