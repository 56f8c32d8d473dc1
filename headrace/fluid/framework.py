"""``paddle.fluid.framework``: the IR classes and program context under their 1.x module."""
from ..core.context import (default_main_program, default_startup_program, in_dynamic_mode, name_scope,
                            program_guard, switch_main_program, switch_startup_program)
from ..core.operator import Operator
from ..core.program import Block, Program
from ..core.variable import Parameter, Variable


def in_dygraph_mode() -> bool:
    return in_dynamic_mode()


__all__ = ["Block", "Operator", "Parameter", "Program", "Variable", "default_main_program",
           "default_startup_program", "in_dygraph_mode", "name_scope", "program_guard",
           "switch_main_program", "switch_startup_program"]
