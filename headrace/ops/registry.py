"""The operator registry: one ``OpDef`` record per op type, declared in one place.

An op file declares, side by side: slots, attributes with defaults, ``infer`` (output shapes and
dtypes at build time), ``kernel`` (NumPy compute, ``kernel(ins, attrs, ctx)``: see
``ops/kernel.py``), ``grad`` (its gradient: a ``Gradient`` declaring the ``<type>_grad`` op, which
``register`` then registers too, or a rule function emitting other ops, or ``NO_GRADIENT``) and the
metadata transformations read: ``inplace`` (outputs that may overwrite an input), ``views``
(outputs that may share an input's buffer), ``no_need_buffer`` (inputs read for shape/dtype
only: they may arrive as a ``Meta``), ``random`` (draws from ``ctx.rng``), ``buffers`` (the kernel
computes into buffers handed through ``ctx``).
"""
from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..core import context, roles
from ..core.names import EMPTY_VAR_NAME
from ..core.dtypes import DType, convert_dtype
from ..core.errors import AttrError, DTypeError, ShapeError, SlotError, fmt_shape, op_message, where
from ..core.operator import set_op_checker
from ..core.variable import Variable
from .gradrule import Gradient, grad_slot, like_infer

REQUIRED = object()  # an attribute default meaning "must be given"


@dataclass(frozen=True)
class Slot:
    name: str
    many: bool = False       # holds a list of variables (duplicable)
    optional: bool = False   # may be absent/empty (dispensable)


def many(name: str, optional: bool = False) -> Slot:
    return Slot(name, many=True, optional=optional)


def optional(name: str) -> Slot:
    return Slot(name, optional=True)


@dataclass
class OpDef:
    type: str
    inputs: tuple
    outputs: tuple
    attrs: dict
    infer: Callable
    kernel: Callable
    grad: Callable | None = None
    inplace: dict = field(default_factory=dict)          # output slot -> input slot it may overwrite
    views: dict = field(default_factory=dict)            # output slot -> input slot whose buffer it may share
    no_need_buffer: frozenset = frozenset()              # input slots read for shape/dtype only
    random: bool = False                                 # draws random numbers (from ctx.rng)
    buffers: bool = False                                # the kernel computes into ctx's handed buffers
    forward_type: str | None = None                      # for a gradient op: its forward op's type
    doc: str = ""

    def input_slot(self, name: str) -> Slot | None:
        index = self.__dict__.get("_input_index")
        if index is None:   # slots are fixed at registration: index them on first use
            index = self.__dict__["_input_index"] = {slot.name: slot for slot in self.inputs}
        return index.get(name)

    def output_slot(self, name: str) -> Slot | None:
        index = self.__dict__.get("_output_index")
        if index is None:
            index = self.__dict__["_output_index"] = {slot.name: slot for slot in self.outputs}
        return index.get(name)


_REGISTRY: dict[str, OpDef] = {}


def _slots(specs) -> tuple:
    return tuple(s if isinstance(s, Slot) else Slot(s) for s in specs)


def register(type: str, *, inputs, outputs, infer, kernel, attrs=None, grad=None, inplace=None,
             no_need_buffer=(), random=False, buffers=False, views=None, doc="",
             forward_type=None) -> OpDef:
    """Declare an op (and, for ``grad=Gradient(...)``, its gradient op).  Re-registering a type
    is an error (one op, one place)."""
    if type in _REGISTRY:
        raise ValueError(f"op `{type}` is registered twice")
    _check_kernel_signature(type, kernel)
    opdef = OpDef(type=type, inputs=_slots(inputs), outputs=_slots(outputs), attrs=dict(attrs or {}),
                  infer=infer, kernel=kernel, grad=grad, inplace=dict(inplace or {}),
                  no_need_buffer=frozenset(no_need_buffer), random=random, buffers=buffers,
                  forward_type=forward_type, views=dict(views or {}), doc=doc)
    for name in opdef.no_need_buffer:
        if opdef.input_slot(name) is None:
            raise ValueError(f"op `{type}`: no_need_buffer names unknown input slot {name!r}")
    for kind, pairs in (("inplace", opdef.inplace), ("views", opdef.views)):
        for out, inp in pairs.items():
            if opdef.output_slot(out) is None or opdef.input_slot(inp) is None:
                raise ValueError(f"op `{type}`: {kind} pair {out!r}->{inp!r} names unknown slots")
    if isinstance(grad, Gradient):
        grad_type = grad.type or f"{type}_grad"
        opdef.grad = grad.rule(grad_type)
        _register_gradient(opdef, grad_type, grad)
    _REGISTRY[type] = opdef
    return opdef


def _check_kernel_signature(type: str, kernel) -> None:
    """Every kernel is ``kernel(ins, attrs, ctx)`` (ops/kernel.py): caught here, not at run time."""
    try:
        params = list(inspect.signature(kernel).parameters.values())
    except (TypeError, ValueError):   # a callable inspect cannot read: trust it
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    if not (len(required) <= 3 and (len(positional) >= 3 or varargs)):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"op `{type}`: a kernel is kernel(ins, attrs, ctx) (see headrace/ops/kernel.py), "
                        f"got {getattr(kernel, '__name__', kernel)}({names})")


def _register_gradient(fwd: OpDef, grad_type: str, spec: Gradient) -> OpDef:
    """Register the gradient op a ``Gradient`` declares: its slots are the forward slots it reads,
    ``S@GRAD`` for each output gradient it reads and, optional, for each input gradient it writes;
    its attributes are the forward op's (all, the named ones, or none)."""
    def slot_of(name, declared):
        found = next((s for s in declared if s.name == name), None)
        if found is None:
            raise ValueError(f"gradient of `{fwd.type}`: {name!r} is not a slot of `{fwd.type}`")
        return found

    inputs = [slot_of(n, fwd.inputs) for n in spec.inputs] + [slot_of(n, fwd.outputs) for n in spec.outputs]
    inputs = [Slot(s.name, s.many, True) if s.name in spec.optional else s for s in inputs]
    for name in spec.output_grads:
        slot = slot_of(name, fwd.outputs)
        inputs.append(Slot(grad_slot(name), many=slot.many, optional=slot.optional))
    outputs = [Slot(grad_slot(n), many=slot_of(n, fwd.inputs).many, optional=True) for n in spec.input_grads]
    if spec.attrs is True:
        attrs = dict(fwd.attrs)
    else:
        attrs = {k: fwd.attrs[k] for k in (spec.attrs or ())}
    infer = spec.infer
    if infer is None:
        like = spec.like if spec.like is not None else {grad_slot(n): n for n in spec.input_grads}
        read = {s.name for s in inputs}
        for out_slot, in_slot in like.items():
            if in_slot not in read:
                raise ValueError(f"gradient of `{fwd.type}`: {out_slot} takes its shape from {in_slot!r}, "
                                 "which the gradient op does not read; give `like` or `infer`")
        infer = like_infer(like)
    return register(grad_type, inputs=inputs, outputs=outputs, infer=infer, kernel=spec.kernel,
                    attrs=attrs, no_need_buffer=spec.no_need_buffer, inplace=spec.inplace,
                    views=spec.views, buffers=spec.buffers, forward_type=fwd.type,
                    doc=spec.doc or f"the gradient of `{fwd.type}`")


class UnknownOpError(AttrError):
    pass


def lookup(type: str) -> OpDef:
    opdef = _REGISTRY.get(type)
    if opdef is None:
        raise UnknownOpError(f"op type `{type}` is not registered")
    return opdef


def has_op(type: str) -> bool:
    return type in _REGISTRY


def registered_ops() -> list:
    return sorted(_REGISTRY)


# --- shape inference -------------------------------------------------------------------------
class Meta:
    """Shape and dtype without data: what a kernel sees for a ``no_need_buffer`` input."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class InferContext:
    """What ``infer`` sees: input shapes/dtypes and attrs; it records output shapes/dtypes.

    Works on Variables (build time, dims may be -1) and on arrays (eager mode).
    """

    __slots__ = ("op_type", "callsite", "ins", "attrs", "outs")

    def __init__(self, op_type, callsite, ins, attrs):
        self.op_type = op_type
        self.callsite = callsite
        self.ins = ins
        self.attrs = attrs
        self.outs = {}

    def has(self, slot: str) -> bool:
        return bool(self.ins.get(slot))

    def count(self, slot: str) -> int:
        return len(self.ins.get(slot) or ())

    def shape(self, slot: str, i: int = 0):
        meta = self.ins[slot][i]
        return tuple(meta.shape) if meta.shape is not None else None

    def shapes(self, slot: str) -> list:
        return [tuple(m.shape) if m.shape is not None else None for m in self.ins.get(slot) or ()]

    def dtype(self, slot: str, i: int = 0) -> DType:
        return convert_dtype(self.ins[slot][i].dtype)

    def dtypes(self, slot: str) -> list:
        return [convert_dtype(m.dtype) for m in self.ins.get(slot) or ()]

    def attr(self, name: str):
        return self.attrs[name]

    def set(self, slot: str, shape, dtype) -> None:
        self.outs[slot] = [(tuple(int(d) for d in shape), convert_dtype(dtype))]

    def set_many(self, slot: str, items) -> None:
        self.outs[slot] = [(tuple(int(d) for d in s), convert_dtype(d)) for s, d in items]

    # errors ---------------------------------------------------------------------------------
    def fail(self, slot: str, expected: str, got: str, kind: str = "input", error=ShapeError):
        raise error(op_message(self.op_type, self.callsite, f"{kind} `{slot}`", expected, got))

    def fail_attr(self, name: str, expected: str, got) -> None:
        raise AttrError(op_message(self.op_type, self.callsite, f"attribute `{name}`", expected, repr(got)))

    def check_dtype(self, slot: str, allowed, i: int = 0) -> DType:
        dtype = self.dtype(slot, i)
        if dtype not in tuple(allowed):
            self.fail(slot, "dtype in {" + ", ".join(str(a) for a in allowed) + "}", str(dtype), error=DTypeError)
        return dtype

    def check_same_dtype(self, slot_a: str, slot_b: str) -> DType:
        a, b = self.dtype(slot_a), self.dtype(slot_b)
        if a != b:
            self.fail(slot_b, f"dtype {a} (the dtype of `{slot_a}`)", str(b), error=DTypeError)
        return a

    def check_rank(self, slot: str, ranks, i: int = 0) -> tuple:
        shape = self.shape(slot, i)
        ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
        if len(shape) not in ranks:
            want = " or ".join(str(r) for r in ranks)
            self.fail(slot, f"rank {want}", f"shape {fmt_shape(shape)} (rank {len(shape)})")
        return shape


# --- the checker run when an op is added to a block -------------------------------------------
COMMON_ATTRS = roles.COMMON_ATTRS


def _plain(value):
    """Attribute values are stored JSON-like: tuples become lists, NumPy scalars Python ones."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, DType):
        return str(value)
    return value


def resolve_attrs(opdef: OpDef, given: dict, op_type: str, callsite) -> dict:
    """Defaults filled in, unknown names rejected, values made plain."""
    attrs = {}
    for name, value in given.items():
        if name not in opdef.attrs and name not in COMMON_ATTRS:
            known = ", ".join(sorted(opdef.attrs)) or "none"
            raise AttrError(f"{where(op_type, callsite)}: unknown attribute {name!r} (known: {known})")
        attrs[name] = _plain(value)
    for name, default in opdef.attrs.items():
        if name not in attrs:
            if default is REQUIRED:
                raise AttrError(f"{where(op_type, callsite)}: attribute {name!r} is required")
            attrs[name] = copy.deepcopy(default)
    return attrs


def check_slots(opdef: OpDef, given: dict, declared: tuple, kind: str, op) -> None:
    for slot_name in given:
        if not any(s.name == slot_name for s in declared):
            known = ", ".join(s.name for s in declared)
            raise SlotError(f"{where(op.type, op.callsite)}: unknown {kind} slot `{slot_name}` (slots: {known})")
    for slot in declared:
        names = given.get(slot.name) or []
        if not names and not slot.optional:
            raise SlotError(f"{where(op.type, op.callsite)}: {kind} `{slot.name}` is required")
        if len(names) > 1 and not slot.many:
            raise SlotError(op_message(op.type, op.callsite, f"{kind} `{slot.name}`",
                                        "exactly one variable", f"{len(names)}: {names}"))


def infer_for_block(block, op) -> None:
    """Validate a new op against its OpDef and set its output variables' shapes and dtypes."""
    opdef = lookup(op.type)
    program = block.program
    given = dict(op.attrs)
    if roles.ROLE_ATTR not in given:
        given[roles.ROLE_ATTR] = program._op_role
    if roles.ROLE_VAR_ATTR not in given and program._op_role_var:
        given[roles.ROLE_VAR_ATTR] = list(program._op_role_var)
    if roles.NAMESCOPE_ATTR not in given:
        given[roles.NAMESCOPE_ATTR] = context.current_name_scope()
    op.attrs = resolve_attrs(opdef, given, op.type, op.callsite)
    check_slots(opdef, op.inputs, opdef.inputs, "input", op)
    check_slots(opdef, op.outputs, opdef.outputs, "output", op)
    ins = input_vars(block, op)
    ctx = run_infer(opdef, op, ins)
    for slot, names in op.outputs.items():
        inferred = ctx.outs[slot]
        if len(inferred) != len(names):
            raise ShapeError(op_message(op.type, op.callsite, f"output `{slot}`",
                                        f"{len(inferred)} variable(s)", f"{len(names)}: {names}"))
        for name, (shape, dtype) in zip(names, inferred):
            if name == EMPTY_VAR_NAME:  # a gradient nobody needs (see autodiff)
                continue
            var = block._find_var_recursive(name)
            if var is None:
                var = block.create_var(name=name, shape=shape, dtype=dtype)
            _store_inferred(var, shape, dtype, op)


def input_vars(block, op) -> dict:
    """``{slot: [Variable]}`` of an op's inputs; each must exist and have a known shape/dtype."""
    ins = {}
    for slot, names in op.inputs.items():
        metas = []
        for name in names:
            var = block._find_var_recursive(name)
            if var is None:
                raise SlotError(f"{where(op.type, op.callsite)}, input `{slot}`: variable {name!r} "
                                f"does not exist in block {block.idx}")
            if var.shape is None or var.dtype is None:
                raise ShapeError(f"{where(op.type, op.callsite)}, input `{slot}`: variable {name!r} "
                                 "has no known shape/dtype (was it produced by an op?)")
            metas.append(var)
        ins[slot] = metas
    return ins


def run_infer(opdef: OpDef, op, ins: dict) -> InferContext:
    """Run ``opdef.infer`` on input metas; every output slot the op uses must get a result."""
    ctx = InferContext(op.type, op.callsite, ins, op.attrs)
    opdef.infer(ctx)
    for slot, names in op.outputs.items():
        if names and slot not in ctx.outs:
            raise SlotError(f"{where(op.type, op.callsite)}: shape inference gave nothing for output `{slot}`")
    return ctx


def _store_inferred(var: Variable, shape, dtype, op) -> None:
    if var.persistable and var.shape is not None and var.dtype is not None:
        if not compatible_shapes(var.shape, shape) or var.dtype != dtype:
            raise ShapeError(op_message(op.type, op.callsite, f"output `{var.name}`",
                                        f"shape {fmt_shape(var.shape)} dtype {var.dtype} (the persistable variable's)",
                                        f"shape {fmt_shape(shape)} dtype {dtype}"))
        return
    var.shape = shape
    var.dtype = dtype


def compatible_shapes(a, b) -> bool:
    """Equal rank and every dim equal or unknown (-1) on one side."""
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))


set_op_checker(infer_for_block)
