"""Operator: an op type, named input/output slots holding variable names, attributes, a role
and the user's file:line that built it.

Slots hold variable *names* (as the reference system's OpDesc does), so transformations rename
and copy ops without touching Variable objects.  Validation and shape inference happen when an
op is added to a block, through the checker that ``headrace.ops`` installs (``set_op_checker``).
"""
from __future__ import annotations

import itertools

from . import roles

_ids = itertools.count()
_checker = None  # installed by headrace.ops.registry: checker(block, op) -> None


def set_op_checker(checker) -> None:
    """Install the function that validates attrs/slots and infers output shapes of a new op."""
    global _checker
    _checker = checker


def op_checker():
    return _checker


class Operator:
    """One op of a Block."""

    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "callsite", "id")

    def __init__(self, block, type, inputs=None, outputs=None, attrs=None, callsite=None):
        self.block = block
        self.type = type
        self.inputs = {slot: list(names) for slot, names in (inputs or {}).items()}
        self.outputs = {slot: list(names) for slot, names in (outputs or {}).items()}
        self.attrs = dict(attrs or {})
        self.callsite = callsite
        self.id = next(_ids)

    # --- slots -------------------------------------------------------------------------------
    def input(self, slot: str) -> list:
        return list(self.inputs.get(slot, ()))

    def output(self, slot: str) -> list:
        return list(self.outputs.get(slot, ()))

    @property
    def input_names(self) -> list:
        return list(self.inputs)

    @property
    def output_names(self) -> list:
        return list(self.outputs)

    @property
    def input_arg_names(self) -> list:
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_arg_names(self) -> list:
        return [n for names in self.outputs.values() for n in names]

    def _rename_input(self, old: str, new: str) -> None:
        for names in self.inputs.values():
            for i, n in enumerate(names):
                if n == old:
                    names[i] = new
        self._touch()

    def _rename_output(self, old: str, new: str) -> None:
        for names in self.outputs.values():
            for i, n in enumerate(names):
                if n == old:
                    names[i] = new
        self._touch()

    # --- attributes --------------------------------------------------------------------------
    def attr(self, name: str):
        if name not in self.attrs:
            raise ValueError(f"op `{self.type}` has no attribute {name!r}; it has {sorted(self.attrs)}")
        return self.attrs[name]

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def all_attrs(self) -> dict:
        return dict(self.attrs)

    @property
    def attr_names(self) -> list:
        return list(self.attrs)

    def _set_attr(self, name: str, value) -> None:
        self.attrs[name] = value
        self._touch()

    def _remove_attr(self, name: str) -> None:
        self.attrs.pop(name, None)
        self._touch()

    @property
    def role(self) -> int:
        return int(self.attrs.get(roles.ROLE_ATTR, 0))

    @property
    def idx(self) -> int:
        for i, op in enumerate(self.block.ops):
            if op is self:
                return i
        raise ValueError(f"op `{self.type}` is not in its block")

    @property
    def desc(self) -> "OpDesc":
        return OpDesc(self)

    def _touch(self) -> None:
        if self.block is not None:
            self.block.program._bump()

    # --- copies and text ---------------------------------------------------------------------
    def _spec(self) -> dict:
        return {
            "type": self.type,
            "inputs": {k: list(v) for k, v in self.inputs.items()},
            "outputs": {k: list(v) for k, v in self.outputs.items()},
            "attrs": {k: _attr_to_json(v) for k, v in self.attrs.items()},
            "callsite": self.callsite,
        }

    def to_string(self) -> str:
        outs = ", ".join(f"{k}={v}" for k, v in self.outputs.items())
        ins = ", ".join(f"{k}={v}" for k, v in self.inputs.items())
        attrs = ", ".join(f"{k} = {_attr_text(v)}" for k, v in sorted(self.attrs.items())
                          if k != roles.ROLE_VAR_ATTR or v)
        return f"{{{outs}}} = {self.type}(inputs={{{ins}}}, {attrs})"

    def __repr__(self):
        return self.to_string()

    __str__ = __repr__


class OpDesc:
    """The reference system's method-style view of an op (``desc.type()``, ``desc.input(slot)``)."""

    __slots__ = ("_op",)

    def __init__(self, op: Operator):
        self._op = op

    def type(self) -> str:
        return self._op.type

    def input(self, slot):
        return self._op.input(slot)

    def output(self, slot):
        return self._op.output(slot)

    def input_names(self):
        return self._op.input_names

    def output_names(self):
        return self._op.output_names

    def input_arg_names(self):
        return self._op.input_arg_names

    def output_arg_names(self):
        return self._op.output_arg_names

    def attr(self, name):
        return self._op.attr(name)

    def has_attr(self, name):
        return self._op.has_attr(name)

    def attr_names(self):
        return self._op.attr_names

    def id(self):
        return self._op.id

    @property
    def op(self) -> Operator:
        return self._op

    def __repr__(self):
        return self._op.to_string()


def _attr_text(value) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _attr_to_json(value):
    """Attributes are JSON-safe already, except NumPy values and tuples (made lists/scalars)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.name}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return [_attr_to_json(v) for v in value]
    if isinstance(value, list):
        return [_attr_to_json(v) for v in value]
    return value


def attr_from_json(value):
    import numpy as np

    if isinstance(value, dict) and "__ndarray__" in value:
        return np.asarray(value["__ndarray__"], dtype=value["dtype"])
    return value
