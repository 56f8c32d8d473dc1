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

# --- issue 16, nn layers ---------------------------------------------------------------------------
from .activation_layers import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh,  # noqa: E402
                                LogSigmoid, LogSoftmax, Maxout, Mish, PReLU, ReLU6, RReLU, SiLU, Silu, Softmax2D,
                                Softplus, Softshrink, Softsign, Swish, Tanhshrink, ThresholdedReLU)
from .containers import (LayerDict, LayerList, Module, ModuleDict, ModuleList, Parameter,  # noqa: E402
                         ParameterDict, ParameterList)
from .conv_layers import Conv1D, Conv1DTranspose, Conv2DTranspose  # noqa: E402
from .layers_3d import (AdaptiveAvgPool3D, AdaptiveMaxPool3D, AdaptiveMaxPool3d, AvgPool3D, Conv3D,  # noqa: E402
                        Conv3d, Conv3DTranspose, MaxPool3D, MaxUnPool3D)
from .misc_layers import (AlphaDropout, Bilinear, ChannelShuffle, Dropout2D, Dropout3D,  # noqa: E402
                          FeatureAlphaDropout, Fold, Identity, PixelShuffle, PixelUnshuffle, Unflatten, Unfold)
from .norm_layers import BatchNorm3D, GroupNorm, InstanceNorm1D, InstanceNorm2D, InstanceNorm3D  # noqa: E402
from .norm_layers import LocalResponseNorm, SpectralNorm  # noqa: E402
from .sync_batch_norm import SyncBatchNorm  # noqa: E402  (multi-process aware: issue 19)
from .rnn import GRU, LSTM, RNN, BiRNN, SimpleRNN  # noqa: E402
from .rnn_cells import GRUCell, LSTMCell, RNNCellBase, SimpleRNNCell  # noqa: E402
from .transformer import (MultiHeadAttention, Transformer, TransformerDecoder,  # noqa: E402
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .pooling import (AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveMaxPool1D, AdaptiveMaxPool1d,  # noqa: E402
                      AdaptiveMaxPool2D, AdaptiveMaxPool2d, AvgPool1D, AvgPool2D, MaxPool1D, MaxPool2D,
                      LPPool1D, LPPool1d, LPPool2D, LPPool2d, MaxUnPool1D, MaxUnPool2D)

Conv1d, Conv2d = Conv1D, Conv2D
__all__ += ["AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveMaxPool1D", "AdaptiveMaxPool1d", "AdaptiveMaxPool2D",
            "AdaptiveMaxPool2d", "AlphaDropout", "AvgPool1D", "AvgPool2D", "BatchNorm3D", "Bilinear", "CELU",
            "ChannelShuffle", "Conv1D", "Conv1DTranspose", "Conv1d", "Conv2DTranspose", "Conv2d", "Dropout2D",
            "Dropout3D", "ELU", "FeatureAlphaDropout", "GLU", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish",
            "Hardtanh", "Identity", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "LayerDict", "LayerList",
            "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MaxPool1D", "MaxPool2D", "Maxout", "Mish", "Module",
            "ModuleDict", "ModuleList", "PReLU", "Parameter", "ParameterDict", "ParameterList", "PixelShuffle",
            "PixelUnshuffle", "RReLU", "ReLU6", "SELU", "SiLU", "Silu", "Softmax2D", "Softplus", "Softshrink",
            "Softsign", "Swish", "Tanhshrink", "ThresholdedReLU", "Unflatten", "BiRNN", "GRU", "GRUCell", "LSTM",
            "LSTMCell", "RNN", "RNNCellBase", "SimpleRNN", "SimpleRNNCell", "MultiHeadAttention", "Transformer",
            "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
            "MaxUnPool1D", "MaxUnPool2D", "Fold", "Unfold", "SyncBatchNorm", "LPPool1D", "LPPool1d", "LPPool2D",
            "LPPool2d", "AdaptiveAvgPool3D", "AdaptiveMaxPool3D", "AdaptiveMaxPool3d", "AvgPool3D", "Conv3D",
            "Conv3d", "Conv3DTranspose", "MaxPool3D", "SpectralNorm", "MaxUnPool3D"]
