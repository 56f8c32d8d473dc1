"""The IR: Program/Block/Variable/Parameter/Operator, names, roles, dtypes, errors, context."""
from . import dtypes, errors, names, roles
from .context import (default_main_program, default_startup_program, disable_static,
                      enable_static, in_dynamic_mode, in_static_mode, name_scope, program_guard)
from .dtypes import DType, convert_dtype
from .operator import Operator
from .program import Block, Program
from .roles import OpRole
from .variable import Parameter, Variable

__all__ = [
    "Block", "DType", "OpRole", "Operator", "Parameter", "Program", "Variable", "convert_dtype",
    "default_main_program", "default_startup_program", "disable_static", "dtypes",
    "enable_static", "errors", "in_dynamic_mode", "in_static_mode", "name_scope", "names",
    "program_guard", "roles",
]
