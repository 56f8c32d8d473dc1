"""``paddle.fluid``: the 1.x API as a thin facade over headrace (names and argument orders only)."""
from ..core import names as unique_name
from ..core.context import (default_main_program, default_startup_program, name_scope, program_guard)
from ..core.program import Program
from ..core.variable import Parameter, Variable
from ..nn import initializer
from ..nn.param_attr import ParamAttr
from ..nn.static_layers import data
from ..runtime import CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, Scope, global_scope, scope_guard
from ..autodiff import gradients
from . import backward, core, framework, layers, optimizer

__all__ = ["backward", "gradients", "optimizer", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "Executor", "ParamAttr", "Parameter", "Program",
           "Scope", "Variable", "core", "data", "default_main_program", "default_startup_program",
           "framework", "global_scope", "initializer", "layers", "name_scope", "program_guard",
           "scope_guard", "unique_name"]
