"""headrace: declarative (static-graph) deep learning on NumPy, with a PaddlePaddle-compatible API.

``import headrace as paddle``; ``import headrace.fluid as fluid``; ``import headrace.static as static``.
"""
from . import ops  # noqa: F401  (registers every op; must come first)
from .core import names as _names  # noqa: F401
from .core.context import disable_static, enable_static, in_dynamic_mode
from .core.dtypes import bool_ as bool  # noqa: A001
from .core.dtypes import float16, float32, float64, int8, int16, int32, int64, uint8
from .core.random import seed
from .nn.functional import abs, exp, log, sqrt, square, tanh  # noqa: A004
from .nn.param_attr import ParamAttr
from .nn.tensor import (add, add_n, assign, cast, concat, divide, flatten, full, matmul, max, maximum,  # noqa: A004
                        mean, min, minimum, multiply, ones, pow, reshape, scale, split, squeeze, subtract,
                        sum, transpose, unsqueeze, zeros)
from .runtime import CPUPlace, CUDAPinnedPlace, CUDAPlace, is_compiled_with_cuda
from . import device, fluid, nn, optimizer, static  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "ParamAttr", "abs", "add", "add_n", "assign", "bool",
    "cast", "concat", "device", "disable_static", "divide", "enable_static", "exp", "flatten", "float16",
    "float32", "float64", "fluid", "full", "in_dynamic_mode", "int16", "int32", "int64", "int8",
    "is_compiled_with_cuda", "log", "matmul", "max", "maximum", "mean", "min", "minimum", "multiply", "nn",
    "ones", "optimizer", "pow", "reshape", "scale", "seed", "split", "sqrt", "square", "squeeze", "static", "subtract",
    "sum", "tanh", "transpose", "uint8", "unsqueeze", "zeros",
]
