"""Static Variables' ``get_value(scope=None)`` / ``set_value(value, scope=None)``, as the
reference's ``Variable`` methods: read or write the variable's tensor in a scope (the global scope
by default).  Bound onto ``core.variable.Variable`` here, as ``nn.operators`` binds the operators
(core may not import the runtime).  ``set_value`` copies the value in (``LoDTensor.set``): the
shape and dtype must be the tensor's; a parameter that ``fuse_all_optimizer_ops`` made a view of a
flat buffer is packed again by the next run, as for any value set into the scope."""
from __future__ import annotations

import numpy as np

from ..core.variable import Variable
from ..runtime.scope import Scope, global_scope


def _scope_tensor(var, scope, what):
    if scope is not None and not isinstance(scope, Scope):
        raise TypeError(f"{var.name}.{what}: scope must be None or a paddle.static.Scope, got "
                        f"{type(scope).__name__}")
    found = (global_scope() if scope is None else scope).find_var(var.name)
    if found is None:
        raise ValueError(f"{var.name}.{what}: the variable is not in the scope (run the startup program, "
                         "or the program that creates it, first)")
    return found.get_tensor()


def get_value(self, scope=None):
    """The scope's tensor of this variable (a ``LoDTensor``: ``np.array(t)`` copies it out)."""
    return _scope_tensor(self, scope, "get_value")


def set_value(self, value, scope=None) -> None:
    """Copy ``value`` (an ndarray, LoDTensor or Tensor) into this variable's tensor in ``scope``."""
    if not hasattr(value, "__array__"):
        raise TypeError(f"{self.name}.set_value: value must be an ndarray or a tensor, got {type(value).__name__}")
    tensor = _scope_tensor(self, scope, "set_value")
    value = np.asarray(value)
    if tensor._is_initialized() and list(value.shape) != tensor.shape():
        raise ValueError(f"{self.name}.set_value: expected a shape {tensor.shape()}, but the received shape is "
                         f"{list(value.shape)}")
    tensor.set(value)


Variable.get_value = get_value
Variable.set_value = set_value
