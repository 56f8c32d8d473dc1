"""``paddle.fluid``: the 1.x API as a thin facade over headrace (names and argument orders only).

Importing it makes static mode the default (fluid 1.x code builds programs), unless the user already
chose a mode with ``enable_static()`` / ``disable_static()``; ``fluid.dygraph.guard()`` runs a block
in dygraph mode.
"""
from ..core.context import prefer_static_default as _prefer_static_default
from ..core import names as unique_name
from ..core.context import (default_main_program, default_startup_program, name_scope, program_guard)
from ..core.program import Program
from ..core.flags import get_flags, set_flags  # noqa: F401  (fluid.set_flags as in 1.8)
from ..core.variable import Parameter, Variable
from ..nn import initializer
from ..nn.param_attr import ParamAttr
from ..nn.static_layers import data
from ..runtime import CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, Scope, global_scope, scope_guard
from .backward import gradients
from . import backward, clip, core, dygraph, framework, layers, optimizer, regularizer
from . import io  # noqa: E402  (saving and loading, issue 14)
from .dygraph import Embedding, Linear
# fluid.compiler names (issue 22)
from . import compiler
from .compiler import BuildStrategy, CompiledProgram, ExecutionStrategy
from ..runtime import is_compiled_with_cuda
# 1.x fidelity (issue 16): fluid.Layer, fluid.embedding, fluid.nets
from . import input, nets  # noqa: A004
from .dygraph import Layer
from .input import embedding
from .dygraph import load_dygraph, save_dygraph  # the 1.x dygraph checkpoint pair
from . import metrics  # issue 17: fluid.metrics (the 1.x Python metrics)

from ..reader.data_feeder import DataFeeder  # issue 17: the 1.x data path
from ..runtime.lod import create_lod_tensor
from ..runtime import cpu_places, cuda_places

_prefer_static_default()

__all__ = ["DataFeeder", "cpu_places", "create_lod_tensor", "cuda_places", "io", "load_dygraph", "save_dygraph", "Layer", "embedding", "input", "nets", "BuildStrategy", "CompiledProgram", "ExecutionStrategy", "compiler", "is_compiled_with_cuda", "Embedding", "Linear", "clip", "dygraph", "backward", "regularizer", "gradients", "optimizer", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "Executor", "ParamAttr", "Parameter", "Program",
           "Scope", "Variable", "core", "data", "default_main_program", "default_startup_program",
           "framework", "global_scope", "initializer", "layers", "name_scope", "program_guard",
           "scope_guard", "unique_name"]
__all__ += ["metrics"]
