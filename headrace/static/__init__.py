"""``paddle.static``: building and running static programs."""
from .backward import append_backward, gradients
from ..core.context import default_main_program, default_startup_program, name_scope, program_guard
from ..core.program import Block, Program
from ..core.variable import Parameter, Variable
from ..nn.functional import accuracy
from ..nn.static_layers import create_global_var, create_parameter, data
from ..passes.strategy import BuildStrategy, ExecutionStrategy
from ..runtime.compiled import CompiledProgram
from ..runtime import (CPUPlace, CUDAPlace, Executor, Scope, cpu_places, cuda_places, global_scope,
                       scope_guard)
from . import nn
# issue 16 names
from ..nn.static_extras import Print, device_guard, py_func
from ..optimizer.ema import ExponentialMovingAverage
from .input_spec import InputSpec

__all__ = ["ExponentialMovingAverage", "InputSpec", "Print", "device_guard", "py_func", "append_backward", "gradients", "Block", "BuildStrategy", "CompiledProgram", "ExecutionStrategy", "CPUPlace", "CUDAPlace", "Executor", "Parameter", "Program", "Scope", "Variable",
           "accuracy", "cpu_places", "create_global_var", "create_parameter", "cuda_places", "data", "default_main_program",
           "default_startup_program", "global_scope", "name_scope", "nn", "program_guard", "scope_guard"]
