"""Gradient rules: an op's gradient described as ops, never as numbers.

A forward op's ``OpDef.grad`` is a *rule*: ``rule(g: GradMaker) -> [GradOp, ...]``.  The rule sees
the forward op's slot names and attributes through ``g`` and returns descriptions of gradient ops
(usually one ``<type>_grad`` op) in the same IR.  Static autodiff appends them to the Program,
eager mode runs them at once, recompute copies them: one rule serves all three.

Naming convention inside gradient ops: forward slots keep their names (``X``, ``Out``), the
gradient of a forward slot ``S`` travels in slot ``S@GRAD`` (spelled by ``grad_slot``).  A rule asks
for all gradients it could produce; autodiff then drops the outputs nobody needs (a data input,
a stop_gradient variable) and fills gradients no op produces with zeros.  So a gradient kernel
must compute only the output slots it is handed (``wanted``) and must accept every slot the rule
may omit as absent.

A forward op usually declares its gradient op with it: ``register(..., grad=Gradient(kernel,
inputs=..., outputs=..., output_grads=..., input_grads=...))`` registers ``<type>_grad`` with the
slots the rule fills (so they are written once) and makes the rule.  A rule that emits other ops
(``scale``'s gradient is a ``scale``) is a plain function.

``NO_GRADIENT`` marks an op that has no gradient by nature (comparisons, random generators,
``shape``): gradient never flows through its outputs.  An op whose ``grad`` is ``None`` has not
been given a rule, and autodiff reports it when it lies on a gradient path.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..core import names, roles

NO_GRADIENT = "no-gradient"


def grad_slot(slot: str) -> str:
    """The slot carrying the gradient of forward slot ``slot``: ``X`` -> ``X@GRAD``."""
    return names.grad_name(slot)


@dataclass
class GradOp:
    """A description of one gradient op: type, slots holding variable names, attributes."""

    type: str
    inputs: dict
    outputs: dict
    attrs: dict = field(default_factory=dict)


# attributes a gradient op inherits from its forward op besides the op's own ones
_INHERITED_COMMON = (roles.NAMESCOPE_ATTR, roles.DEVICE_ATTR)


class GradMaker:
    """What a gradient rule sees: the forward op's slots (variable names) and attributes.

    ``grad_name(name)`` names the gradient variable of a forward variable; autodiff supplies it
    (so repeated backward passes get independent names); by default it is ``name@GRAD``.
    """

    __slots__ = ("type", "inputs", "outputs", "attrs", "common", "grad_name")

    def __init__(self, op_type, inputs, outputs, attrs, grad_name=None):
        self.type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = {k: v for k, v in attrs.items() if k not in roles.COMMON_ATTRS}
        self.common = {k: attrs[k] for k in _INHERITED_COMMON if k in attrs}
        self.grad_name = grad_name or names.grad_name

    @classmethod
    def of(cls, op, grad_name=None) -> "GradMaker":
        return cls(op.type, op.inputs, op.outputs, op.attrs, grad_name)

    def input(self, slot: str) -> list:
        return list(self.inputs.get(slot) or ())

    def output(self, slot: str) -> list:
        return list(self.outputs.get(slot) or ())

    def input_grad(self, slot: str) -> list:
        """Gradient variable names of the forward inputs in ``slot``."""
        return [self.grad_name(n) for n in self.input(slot)]

    def output_grad(self, slot: str) -> list:
        """Gradient variable names of the forward outputs in ``slot``."""
        return [self.grad_name(n) for n in self.output(slot)]

    def attr(self, name: str):
        return self.attrs[name]

    def grad_op(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> GradOp:
        """Describe a gradient op; empty slots are dropped, attrs default to the forward op's."""
        attrs = dict(self.attrs if attrs is None else attrs)
        for key, value in self.common.items():
            attrs.setdefault(key, value)
        return GradOp(type,
                      {s: list(v) for s, v in inputs.items() if v},
                      {s: list(v) for s, v in outputs.items() if v},
                      attrs)


def standard_rule(grad_type: str, inputs=("X",), outputs=(), output_grads=("Out",),
                  input_grads=("X",), attrs=True):
    """The common one-op rule: the gradient op reads the named forward inputs, forward outputs
    and output gradients, and writes the gradients of ``input_grads``.

    ``attrs=True`` passes the forward attributes on; ``attrs=False`` passes none; a tuple passes
    only those names.
    """

    def rule(g: GradMaker) -> list:
        ins = {s: g.input(s) for s in inputs}
        ins.update({s: g.output(s) for s in outputs})
        ins.update({grad_slot(s): g.output_grad(s) for s in output_grads})
        outs = {grad_slot(s): g.input_grad(s) for s in input_grads}
        if attrs is True:
            op_attrs = None
        elif attrs is False:
            op_attrs = {}
        else:
            op_attrs = {k: g.attrs[k] for k in attrs}
        return [g.grad_op(grad_type, ins, outs, op_attrs)]

    return rule


@dataclass(frozen=True)
class Gradient:
    """A forward op's gradient op, declared with the forward op (``register(..., grad=...)``).

    The gradient op reads the forward ``inputs`` and ``outputs`` named here and the gradients of
    ``output_grads``, and writes the gradients of ``input_grads`` (``S@GRAD`` slots).  It keeps
    the forward op's attributes (``attrs=True``), only the named ones (a tuple) or none
    (``False``).  Its shape inference is ``infer``, or ``like`` (output slot -> input slot it
    takes shape and dtype from), by default each input gradient like its forward input.  A read
    forward slot is required in the gradient op when it is required in the forward op, unless
    named in ``optional`` (a rewrite such as a fusion may build the gradient op without it).
    """

    kernel: Callable
    inputs: tuple = ("X",)
    outputs: tuple = ()
    output_grads: tuple = ("Out",)
    input_grads: tuple = ("X",)
    attrs: object = True
    infer: Callable | None = None
    like: dict | None = None
    no_need_buffer: tuple = ()
    inplace: dict | None = None
    views: dict | None = None
    buffers: bool = False
    optional: tuple = ()          # forward slots read that the gradient op may go without
    type: str | None = None       # default: "<forward type>_grad"
    doc: str = ""

    def rule(self, grad_type: str):
        return standard_rule(grad_type, self.inputs, self.outputs, self.output_grads,
                             self.input_grads, self.attrs)


def like_infer(pairs: dict):
    """Shape inference for a gradient op whose outputs take shape and dtype from inputs:
    ``pairs`` maps output slot -> input slot (``{"X@GRAD": "X"}``); ``many`` slots map
    position by position."""

    def infer(ctx):
        for out_slot, in_slot in pairs.items():
            if not ctx.has(in_slot):
                continue
            ctx.set_many(out_slot, [(shape, dtype) for shape, dtype in
                                    zip(ctx.shapes(in_slot), ctx.dtypes(in_slot))])
    return infer
