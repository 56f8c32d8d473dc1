"""The one step runner: an op's kernel called on values taken from an environment.

A ``Step`` is an op made ready to run: its ``OpDef``, where its inputs come from and where its
outputs go (``((slot, (names...), many), ...)``), its resolved attributes, the generator a random
op draws from, and the ``KernelContext`` its kernel gets.  Three callers run ops through it:

- the Executor (``runtime/plan.py`` makes a Step per op of a Program, names are variable names);
- the eager runner (``eager/runner.py``, a Step per op call, names identify the Tensors);
- the eager tape (``eager/tape.py``, a Step per gradient op, names local to the recorded node).

``Step.run(env, buffers)`` gathers the inputs, calls ``kernel(ins, attrs, ctx)``, checks the
outputs in check mode and turns any exception into the one wrapped form (``wrap_kernel_error``:
the original stays reachable as ``__cause__`` and catchable as its own type).  Storing the
outputs is the caller's business (scopes and memory accounting in the executor, Tensors in eager
mode).

Check mode (``HEADRACE_CHECK_KERNELS=1``, set by the test suite) checks every output: a
``numpy.ndarray``, of the expected shape and dtype when the caller knows them, sharing no memory
with an input unless the op declares it (``OpDef.views``), the input is the same variable, or the
input was handed to the kernel as a buffer.
"""
from __future__ import annotations

import os

import numpy as np

from ..core import flags
from ..core.callsite import text
from ..core.errors import KernelError, fmt_shape, is_wrapped, where, wrap_kernel_error
from ..core.random import default_generator, fixed_generator
from . import nancheck
from .kernel import KernelContext, root_of

CHECK_KERNELS = os.environ.get("HEADRACE_CHECK_KERNELS", "") not in ("", "0")


def generator_source(attrs, program=None):
    """Which generator a random op draws from, as a callable (see core/random.py): a fixed one for
    a ``seed``/``fix_seed`` attribute, else the program's own (``Program.random_seed``), else the
    global one.  A ``Seed`` input is read by the kernel itself."""
    seed = int(attrs.get("seed", 0) or 0)
    if attrs.get("fix_seed", False) or seed != 0:
        return lambda: fixed_generator(seed)
    program_gen = program.random_generator() if program is not None else None
    if program_gen is not None:
        return lambda: program_gen.numpy
    return lambda: default_generator().numpy


class Step:
    """One op ready to run (see the module docstring).  ``ins``/``outs`` may be None where the
    names are not needed (the eager runner outside check mode)."""

    __slots__ = ("opdef", "op_type", "callsite", "kernel", "ins", "outs", "attrs", "ctx", "rng", "note",
                 "plain", "nan_check")

    def __init__(self, opdef, op_type, callsite, ins, outs, attrs, program=None, note="", ctx=None):
        self.opdef = opdef
        self.op_type = op_type
        self.callsite = callsite
        self.kernel = opdef.kernel
        self.ins = ins
        self.outs = outs
        self.attrs = attrs
        # the generator source of a random op: resolved once per call (a redraw loop sees one stream)
        self.rng = generator_source(attrs, program) if opdef.random else None
        self.ctx = ctx if ctx is not None else KernelContext(frozenset(slot for slot, _, _ in outs))
        self.note = note   # added to error messages, e.g. "the gradient of `relu`"
        # ``call`` without buffers does nothing but ``kernel(ins, attrs, ctx)`` for a step that
        # draws no random numbers while check mode is off: the executor's hot loop calls the
        # kernel itself then (a Python call less per op)
        # FLAGS_check_nan_inf's level if it was on when the step was made (see nancheck.py)
        self.nan_check = flags.nan_inf_level()
        self.plain = self.rng is None and not CHECK_KERNELS and self.nan_check is None

    def site(self):
        """The user's line that built the op, as text (``callsite`` may be a function finding it
        late, or an eager node's raw ``(file, line)``: ``core/callsite.py``)."""
        site = self.callsite() if callable(self.callsite) else self.callsite
        return text(site) if type(site) is tuple else site

    @classmethod
    def from_slots(cls, opdef, op_type, callsite, inputs: dict, outputs: dict, attrs, program=None,
                   note=""):
        """A Step from ``{slot: [names]}`` dicts (empty slots dropped)."""
        ins = tuple((slot, tuple(names), opdef.input_slot(slot).many)
                    for slot, names in inputs.items() if names)
        outs = tuple((slot, tuple(names), opdef.output_slot(slot).many)
                     for slot, names in outputs.items() if names)
        return cls(opdef, op_type, callsite, ins, outs, attrs, program, note)

    def gather(self, env) -> dict:
        ins = {}
        for slot, names, many in self.ins:
            ins[slot] = [env[n] for n in names] if many else env[names[0]]
        return ins

    def run(self, env, buffers=None, expect=None):
        """``(ins, outs)``: the kernel run on ``env``'s values, with ``buffers`` handed as ``out``.
        ``expect(name)`` gives an output's expected ``(shape, dtype)`` (check mode) or None."""
        ins = self.gather(env)
        return ins, self.call(ins, buffers, expect)

    def call(self, ins, buffers=None, expect=None, attrs=None):
        """The kernel's outputs for gathered inputs ``ins`` (see ``run``); ``attrs`` replaces the
        step's attributes (the eager runner reuses one step per op type)."""
        ctx = self.ctx
        if buffers or self.rng is not None:
            ctx = KernelContext(ctx.wanted, buffers, self.rng() if self.rng is not None else None)
        try:
            outs = self.kernel(ins, self.attrs if attrs is None else attrs, ctx)
            if CHECK_KERNELS:
                check_outputs(self, ins, outs, expect, buffers)
            if self.nan_check is not None:
                nancheck.check(self, ins, outs, self.nan_check)
        except Exception as exc:
            if is_wrapped(exc):
                raise
            raise self.error(exc, ins) from exc
        return outs

    def error(self, exc, ins=None) -> BaseException:
        """The wrapped form of ``exc`` raised while running this step."""
        described = []
        if self.ins is None:    # no names: describe by slot
            for slot, value in (ins or {}).items():
                for item in (value if isinstance(value, list) else [value]):
                    described.append(f"{slot}={self.describe_input(None, item)}")
        for slot, names, many in self.ins or ():
            values = (ins.get(slot) if many else [ins.get(slot)] * len(names)) if ins else [None] * len(names)
            for name, value in zip(names, values):
                described.append(f"{slot}={self.describe_input(name, value)}")
        detail = f"  inputs: {', '.join(described) or 'none'}"
        if self.note:
            detail = f"  ({self.note})\n{detail}"
        return wrap_kernel_error(exc, self.op_type, self.site(), detail)

    def describe_input(self, name, value) -> str:
        """An input in an error message: its shape (subclasses add the variable)."""
        return fmt_shape(value.shape) if hasattr(value, "shape") else "?"


def check_outputs(step, ins, outs, expect=None, buffers=None) -> None:
    """Check mode: see the module docstring."""
    views = step.opdef.views
    given = {id(b) for b in buffers.values()} if buffers else ()
    # a handed buffer may be a view (a dead view output): its base is the plan's, not the kernel's
    given_roots = {id(root_of(b)) for b in buffers.values()} if buffers else ()
    inputs = []
    for slot, names, many in step.ins:
        values = ins[slot] if many else (ins[slot],)
        inputs.extend((slot, name, value) for name, value in zip(names, values)
                      if type(value) is np.ndarray and id(value) not in given)
    # an output may view a sibling output that owns its whole buffer (coalesce_tensor's Output
    # views of its FusedOutput): the buffer is counted once, through its owner
    owners = {id(v) for slot in outs for v in (outs[slot] if isinstance(outs[slot], list) else (outs[slot],))
              if isinstance(v, np.ndarray) and v.base is None}
    for slot, names, many in step.outs:
        if slot not in outs:
            _fail(step, f"the kernel gave no output `{slot}`")
        values = outs[slot] if many else (outs[slot],)
        for name, value in zip(names, values):
            if type(value) is not np.ndarray:
                _fail(step, f"kernel output {_named(slot, name)} is a {type(value).__name__}, "
                            "expected numpy.ndarray")
            shared = False
            for in_slot, in_name, in_value in inputs:
                if root_of(value) is not root_of(in_value) and not np.may_share_memory(value, in_value):
                    continue
                shared = True
                if views.get(slot) != in_slot and in_name != name:
                    _fail(step, f"kernel output {_named(slot, name)} shares memory with input "
                                f"{_named(in_slot, in_name)}, which the op does not declare in `views`")
            if not shared and id(root_of(value)) not in given_roots and root_of(value).nbytes != value.nbytes \
                    and id(root_of(value)) not in owners:
                _fail(step, f"kernel output {_named(slot, name)} ({value.nbytes} bytes) is a view of a larger "
                            f"array of its own ({root_of(value).nbytes} bytes), which it keeps alive: return a "
                            "copy (np.ascontiguousarray) so an output owns exactly its bytes")
            expected = expect(name) if expect is not None else None
            if expected is not None:
                _check_meta(step, _named(slot, name), value, *expected)


def _check_meta(step, slot, value, shape, dtype) -> None:
    shape_ok = len(value.shape) == len(shape) and all(d == -1 or d == a for d, a in zip(shape, value.shape))
    if not shape_ok or value.dtype != np.dtype(dtype):
        _fail(step, f"kernel output {slot} has shape {fmt_shape(value.shape)} dtype {value.dtype}, "
                    f"inferred shape {fmt_shape(shape)} dtype {np.dtype(dtype)}")


def _named(slot, name) -> str:
    """A slot in a message, with its variable when names are variable names: ``Out` (relu_0.tmp_0)``."""
    return f"`{slot}` ({name})" if isinstance(name, str) and not name.startswith(f"{slot}:") else f"`{slot}`"


def _fail(step, message):
    site = step.site()
    error = KernelError(f"{where(step.op_type, site)}: {message}")
    error.headrace_op = (step.op_type, site)
    raise error
