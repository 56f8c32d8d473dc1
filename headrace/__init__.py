"""headrace: deep learning on NumPy with a PaddlePaddle-compatible API, in eager (dygraph) or
static-graph mode.

``import headrace as paddle`` (eager by default, as Paddle 2.x); ``import headrace.fluid as fluid``
(the 1.x API: importing it makes static mode the default unless a mode was chosen explicitly);
``import headrace.static as static``.  ``paddle.enable_static()`` / ``paddle.disable_static()``
switch explicitly.
"""
from . import ops  # noqa: F401  (registers every op; must come first)
from . import eager  # noqa: F401  (installs the eager runner)
from .core import names as _names  # noqa: F401
from .core.context import disable_static, enable_static, in_dynamic_mode
from .core.dtypes import bool_ as bool  # noqa: A001
from .core.flags import get_flags, set_flags
from .core.dtypes import float16, float32, float64, int8, int16, int32, int64, uint8
from .core.random import get_cuda_rng_state, get_rng_state, seed, set_cuda_rng_state, set_rng_state
from .eager import Tensor, enable_grad, is_grad_enabled, no_grad
from .nn.functional import abs, exp, log, sqrt, square, tanh  # noqa: A004
from .nn.param_attr import ParamAttr
from .nn.tensor import (add, add_n, arange, assign, cast, concat, divide, flatten, full, gaussian,  # noqa: A004
                        matmul, max, maximum, mean, min, minimum, multiply, normal, ones, ones_like, pow,
                        rand, randn, reshape, scale, split, squeeze, subtract, sum, to_tensor, transpose,
                        uniform, unsqueeze, zeros, zeros_like)
from .runtime import CPUPlace, CUDAPinnedPlace, CUDAPlace, is_compiled_with_cuda
from . import device, distributed, incubate, nn, optimizer, regularizer, static  # noqa: E402
from .distributed import DataParallel  # noqa: E402
from . import io  # noqa: E402,F401
# --- tensor ops (issue 16): the math/search/manipulation/creation families, in-place variants,
# methods on Tensor/Variable, dtype names and the device functions
from .nn import paddle_ops as _paddle_ops  # noqa: E402
from .nn.paddle_ops import *  # noqa: E402,F401,F403
from .core.dtypes import float16 as half, float32 as float, float64 as double  # noqa: E402,A001
from .device import get_device, set_device  # noqa: E402
from . import linalg  # noqa: E402

_paddle_ops.bind()
from .framework import load, save  # noqa: E402  (saving and loading, issue 14)
from . import amp, autograd  # noqa: E402  (issue 16: eager autograd and AMP names)
from .autograd import grad  # noqa: E402
from . import reader  # noqa: E402  (issue 17: the 1.x reader decorators and paddle.batch)
from .reader.batch import batch  # noqa: E402
from . import dataset, text, vision  # noqa: E402,F401  (issue 17: datasets, transforms)

from . import callbacks, hapi  # noqa: E402  (issue 17: paddle.Model and paddle.callbacks)
from .hapi import Model  # noqa: E402
from .static.param import create_parameter  # noqa: E402  (paddle.create_parameter, both modes)

__version__ = "0.1.0"


def __getattr__(name):
    """``headrace.fluid`` is imported on first use (PEP 562): importing it changes the default mode."""
    if name == "fluid":
        import importlib

        return importlib.import_module(".fluid", __name__)
    raise AttributeError(f"module 'headrace' has no attribute {name!r}")


__all__ = [
    "DataParallel", "io", "amp", "autograd", "grad",
    "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "ParamAttr", "Tensor", "abs", "add", "add_n", "arange",
    "assign", "bool", "cast", "concat", "device", "disable_static", "distributed", "divide", "enable_grad",
    "enable_static", "exp", "incubate", "flatten", "float16", "float32", "float64", "full", "gaussian",
    "get_cuda_rng_state", "get_rng_state", "in_dynamic_mode", "int16", "int32", "int64", "int8",
    "is_compiled_with_cuda", "is_grad_enabled", "load", "save", "log", "matmul", "max", "maximum", "mean", "min", "minimum",
    "multiply", "nn", "no_grad", "normal", "ones", "ones_like", "optimizer", "pow", "rand", "randn",
    "regularizer", "reshape", "scale", "seed", "set_cuda_rng_state", "set_rng_state", "split", "sqrt", "square", "squeeze",
    "static", "subtract", "sum", "tanh", "to_tensor", "transpose", "uint8", "uniform", "unsqueeze", "zeros",
    "zeros_like",
    "get_flags", "set_flags",
]
__all__ += ["Model", "callbacks", "create_parameter", "hapi"]
__all__ += ["batch", "reader"]
__all__ += _paddle_ops.__all__ + ["double", "float", "get_device", "half", "linalg", "set_device"]

# issue 17: paddle.metric, paddle.summary / paddle.flops (and paddle.vision, imported above)
from . import metric  # noqa: E402  (vision is imported above, with the datasets)
from .hapi import flops, summary  # noqa: E402
__all__ += ["flops", "metric", "summary", "vision"]
