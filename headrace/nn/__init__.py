"""``paddle.nn``: layers (both modes), functional ops, parameters and initializers."""
from . import functional, initializer  # noqa: F401
from . import operators, tensor_methods  # noqa: F401  (bind x + y ... and x.mean(), x[...] onto Tensor/Variable)
from .layer import Layer
from .layers import (GELU, BatchNorm, BatchNorm1D, BatchNorm2D, Conv2D, Dropout, Embedding, Flatten,
                     LayerNorm, LeakyReLU, Linear, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .param_attr import ParamAttr
from ..optimizer.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from .loss_layers import *  # noqa: F401,F403  (CrossEntropyLoss, MSELoss, ... CosineSimilarity, PairwiseDistance)
from .loss_layers import __all__ as _loss_layers
from .resize import *  # noqa: F401,F403  (Pad1D/2D/3D, ZeroPad*, ConstantPad*, ReflectionPad*, ..., Upsample*)
from .resize import __all__ as _resize_layers

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GELU", "BatchNorm", "BatchNorm1D", "BatchNorm2D", "Conv2D", "Dropout", "Embedding", "Flatten",
           "LayerNorm", "Layer", "LeakyReLU", "Linear", "ParamAttr", "ReLU", "Sequential", "Sigmoid",
           "Softmax", "Tanh", "functional", "initializer"] + _loss_layers + _resize_layers
