"""The eager runner's fast path: one specialised ``FastOp`` per call signature that passed.

A call qualifies when every input is one Tensor (or Parameter) per single-Tensor slot (a lone
Tensor given for a slot that takes several goes to the kernel as a list: full path), so is every output
Tensor the caller passes (an optimizer's update: ``run_into``), every attribute is a plain ``int``/``float``/``bool``/``str``/``None``, the op
draws no random numbers and has single output slots only, and check mode is off.  Its *key* is
the op type, the input slots, each input's shape and dtype, the output slots the caller passed
Tensors for, and each attribute's name, type and value (``-0.0`` and ``0.0``, ``True`` and ``1``
differ): everything ``resolve_attrs`` and ``infer`` read and which outputs the kernel computes.
The first such call runs the full path (``runner.py``: attribute resolution, shape inference,
errors naming the user's line); when it succeeds the runner stores a ``FastOp`` under the key.  A
later call with the same key is one dict look-up, the kernel (looked up on the ``OpDef`` at each
call), the output Tensors and, when an input requires grad, the record plan of its
``(inputs requiring grad, floating outputs)`` from the ``FastOp``'s own dict (``opnode.py``).

With ``FLAGS_check_nan_inf`` on, the fast path is skipped (the full path checks every output); a
kernel error is wrapped exactly as on the full path (the same ``Step.error``).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..core import flags
from ..core.callsite import user_site
from ..core.errors import is_wrapped
from . import tape
from .opnode import make_plan, record
from .tensor import Parameter, Tensor

FAST: dict = {}          # key -> FastOp
FAST_MAX = 4096          # forgotten all at once when full (varying shapes must not grow it forever)
_TENSORS = (Tensor, Parameter)
_PLAIN_ATTRS = (int, str, bool, type(None))
_copysign = math.copysign
_STOP = operator.attrgetter("stop_gradient")
_not = operator.not_
_wrap = Tensor._wrap
_OUTPUTS = object()      # in a key: the output slots the caller passed Tensors for follow
_FLOATING, _NOT_FLOATING = (True,), (False,)


def fast_key(op_type, inputs, attrs, outputs):
    """The call's key (see the module docstring), or None when the call does not qualify."""
    key = [op_type, *inputs]            # the input slots, then each one's shape and dtype
    append = key.append
    for value in inputs.values():
        if type(value) not in _TENSORS:
            return None
        array = value._value
        append(array.shape)
        append(array.dtype)
    if outputs:
        append(_OUTPUTS)
        for value in outputs.values():
            if type(value) not in _TENSORS:
                return None
        key += outputs
    if attrs:
        for name, value in attrs.items():
            kind = type(value)
            if kind is float:
                key += (name, kind, value, _copysign(1.0, value))
            elif kind in _PLAIN_ATTRS:
                key += (name, kind, value)
            else:
                return None
    return tuple(key)


class FastOp:
    """One signature's resolved attributes, kernel context, error wrapper (the runner's plain
    ``Step``), output slots and record plans."""

    __slots__ = ("op_type", "opdef", "attrs", "ctx", "step", "out_slots", "differentiable", "plans",
                 "in_slots", "floating", "out_key", "by_stops")

    def __init__(self, op_type, opdef, attrs, step, out_slots, differentiable, in_slots, plans, floating):
        self.op_type, self.opdef, self.attrs = op_type, opdef, attrs
        self.step, self.ctx = step, step.ctx
        self.out_slots = out_slots            # output slot names, in the kernel's order
        self.differentiable = differentiable  # the op has a gradient rule (or none: recorded, fails late)
        self.in_slots = in_slots
        self.plans = plans                    # the signature's record plans, shared with the full path
        self.floating = floating              # which outputs were floating-point on the first call
        self.out_key = tuple([(slot, 0, f) for slot, f in zip(out_slots, floating)])
        # the record plans of calls with the usual floating outputs, by their inputs'
        # stop_gradient flags: a layer called again finds its plan without building the plan key
        self.by_stops = {}

    def _kernel(self, inputs) -> dict:
        """The kernel on the Tensors' arrays; its errors wrapped as on the full path."""
        ins = {}
        for slot, t in inputs.items():
            ins[slot] = t._value
        try:
            return self.opdef.kernel(ins, self.attrs, self.ctx)
        except Exception as exc:
            if is_wrapped(exc):
                raise
            raise self.step.error(exc, ins) from exc

    def run_into(self, inputs, outputs) -> dict:
        """``run`` for a call that passes its output Tensors (an optimizer's update): their values
        are replaced (not inside a recompute's second forward, as on the full path); they never
        join the graph.  A call with an input requiring grad takes the full path."""
        if tape.grad_enabled and self.differentiable:
            for t in inputs.values():
                if not t.stop_gradient:
                    return None
        outs = self._kernel(inputs)
        result = {}
        for slot in self.out_slots:
            value = outs[slot]
            if type(value) is not np.ndarray:
                value = np.asarray(value)
            t = outputs.get(slot)
            if t is None:                 # an output the caller did not ask for
                t = Tensor._wrap(value)
            elif not tape.recomputing:
                t._value = value
            result[slot] = [t]
        return result

    def run(self, inputs) -> dict:
        outs = self._kernel(inputs)
        if tape.grad_enabled and self.differentiable:
            in_tensors = list(inputs.values())
            stops = tuple(map(_STOP, in_tensors))
            if False in stops:
                return self._run_tracked(outs, in_tensors, stops)
        result = {}
        for slot in self.out_slots:
            value = outs[slot]
            if type(value) is not np.ndarray:
                value = np.asarray(value)
            result[slot] = [_wrap(value, True)]
        return result

    def _run_tracked(self, outs, in_tensors, stops) -> dict:
        """The outputs of a call with an input requiring grad: floating-point ones require grad
        and the op is recorded (``track_only``: noted as tracked)."""
        result, out_tensors, floating = {}, [], ()
        for slot in self.out_slots:
            value = outs[slot]
            if type(value) is not np.ndarray:
                value = np.asarray(value)
            f = value.dtype.kind == "f"
            t = _wrap(value, not f)
            if len(self.out_slots) == 1:      # the usual case: one list for the result and the record
                out_tensors = result[slot] = [t]
                floating = _FLOATING if f else _NOT_FLOATING
                break
            out_tensors.append(t)
            floating += (f,)
            result[slot] = [t]
        if not tape.recording:
            for t in out_tensors:
                if not t.stop_gradient:
                    tape.note_tracked(t)
            return result
        site = user_site(3)     # past _run_tracked, run and runner.run_op (formatted only for messages)
        if floating == self.floating:
            plan = self.by_stops.get(stops)
            if plan is None:
                plan = self.by_stops[stops] = self._plan(stops, self.out_key, floating, site)
        else:
            plan = self._plan(stops, tuple([(slot, 0, f) for slot, f in zip(self.out_slots, floating)]),
                              floating, site)
        record(plan, in_tensors, out_tensors, site)
        return result

    def _plan(self, stops, out_key, floating, site):
        """The record plan for these inputs' stop_gradient flags and floating outputs, from the
        signature's plans (shared with the full path: ``runner._record``'s key), made once."""
        requires = tuple(map(_not, stops))
        key = (requires, out_key)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = make_plan(
                self.op_type, self.opdef, self.attrs, [(slot, 0) for slot in self.in_slots],
                [(slot, 0) for slot in self.out_slots], requires, floating, site)
        return plan


def learn(key, op_type, opdef, attrs, step, inputs, wanted, differentiable, plans, out_arrays) -> None:
    """Store the FastOp of a call that passed the full path (``key`` from ``fast_key``;
    ``plans``: the signature's record plans, None when its attributes were unhashable)."""
    if flags._nan_inf is not None or opdef.random or plans is None or any(many for _, many in wanted):
        return
    if any(opdef.input_slot(slot).many for slot in inputs):   # the kernel wants a list there
        return
    if len(FAST) >= FAST_MAX:
        FAST.clear()
    FAST[key] = FastOp(op_type, opdef, attrs, step, tuple(slot for slot, _ in wanted), differentiable,
                       tuple(inputs), plans, tuple(f for _, _, _, f in out_arrays))
