"""``paddle.static``: building and running static programs."""
from .backward import append_backward, gradients
from ..core.context import default_main_program, default_startup_program, name_scope, program_guard
from ..core.program import Block, Program
from ..core.variable import Parameter, Variable
from ..nn.functional import accuracy
from ..nn.static_layers import create_global_var, data
from .param import create_parameter
from ..passes.strategy import BuildStrategy, ExecutionStrategy
from ..runtime.compiled import CompiledProgram
from ..runtime import (CPUPlace, CUDAPlace, Executor, Scope, cpu_places, cuda_places, global_scope,
                       scope_guard)
from . import nn
# issue 16 names
from ..nn.static_extras import Print, auc, device_guard, py_func
from ..optimizer.ema import ExponentialMovingAverage
from .input_spec import InputSpec
from ..nn.weight_norm import WeightNormParamAttr
from ..framework.static_io import load, load_program_state, save, set_program_state
from ..framework.inference_io import (deserialize_persistables, deserialize_program, load_from_file,
                                      load_inference_model, normalize_program, save_inference_model,
                                      save_to_file, serialize_persistables, serialize_program)

__all__ = ["deserialize_persistables", "deserialize_program", "load", "load_from_file", "load_inference_model",
           "load_program_state", "normalize_program", "save", "save_inference_model", "save_to_file",
           "serialize_persistables", "serialize_program", "set_program_state"]
__all__ += ["ExponentialMovingAverage", "InputSpec", "Print", "WeightNormParamAttr", "auc", "device_guard", "py_func"]

__all__ += ["append_backward", "gradients", "Block", "BuildStrategy", "CompiledProgram", "ExecutionStrategy", "CPUPlace", "CUDAPlace", "Executor", "Parameter", "Program", "Scope", "Variable",
           "accuracy", "cpu_places", "create_global_var", "create_parameter", "cuda_places", "data", "default_main_program",
           "default_startup_program", "global_scope", "name_scope", "nn", "program_guard", "scope_guard"]
