"""``estimate(program, feed)``: the peak of live bytes a run will reach, computed before running.

Contract
--------
``estimate(program, feed, build_strategy=None, fetch_list=None)`` builds the plan the Executor
would run (the same execution order, liveness frees and strips, and buffer plan; with a
``build_strategy``, or for a ``CompiledProgram`` on one place, the program its passes produce) and
replays the executor's accounting over it with shapes instead of arrays: no kernel runs.
``feed`` maps each fed name to an array or to a shape (list/tuple of ints).

The result is ``MemoryEstimate``: ``peak_bytes``, ``peak_op`` ``(index, type)`` (the step during
which the peak is reached; -1 and "feed" if it is reached before the first op),
``live_at_peak`` (variable -> bytes it holds at that moment, counting a shared buffer once, for
the variable that made it), ``persistable_bytes`` and ``profile`` (live bytes after each op, and
the peak inside it).  ``peak_bytes`` equals ``device.cpu.max_memory_allocated()`` of the real
run minus the bytes tracked outside the program's scope (its persistables are counted at their
declared shapes, as the startup program makes them), to the byte.

What makes that exact: the executor counts distinct owning allocations; check mode guarantees
that a fresh kernel output owns exactly its bytes and that only declared views share an input's
buffer; ``aliasing.py`` says when a declared view really is one (NumPy decides reshapes, on layout
proxies) and replays pure view kernels on proxies.  Shapes come from each op's ``infer`` on the
concrete input shapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import FeedError, HeadraceError
from ..core.names import RECOMPUTE_MARK
from ..core.program import Program
from ..ops.kernel import root_of
from ..ops.registry import InferContext, Meta
from ..runtime.plan import build_plan
from . import aliasing
from .flops import op_flops


class Buffer:
    """One owning allocation of the simulated run."""

    __slots__ = ("nbytes", "refs")

    def __init__(self, nbytes):
        self.nbytes, self.refs = int(nbytes), 0


class Value:
    """A simulated array: its buffer, shape and dtype, and (built when a rule asks for it) a layout
    proxy with its strides; a value made without a layout is C-contiguous."""

    __slots__ = ("buffer", "shape", "dtype", "_layout")

    def __init__(self, buffer, layout=None, shape=None, dtype=None):
        self.buffer, self._layout = buffer, layout
        self.shape = tuple(layout.shape) if layout is not None else tuple(shape)
        self.dtype = layout.dtype if layout is not None else np.dtype(dtype)

    @property
    def layout(self):
        if self._layout is None:
            self._layout = aliasing.proxy(self.shape, self.dtype)
        return self._layout

    @property
    def nbytes(self):
        return math.prod(self.shape) * self.dtype.itemsize

    @classmethod
    def fresh(cls, shape, dtype):
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        return cls(Buffer(math.prod(shape) * dtype.itemsize), None, shape, dtype)


@dataclass
class MemoryEstimate:
    peak_bytes: int
    peak_op: tuple
    live_at_peak: dict
    persistable_bytes: int
    profile: list = field(default_factory=list)   # per op: (index, type, live after, peak inside)
    op_types: list = field(default_factory=list)
    roles: list = field(default_factory=list)
    flops: list = field(default_factory=list)      # per op, at the estimated shapes (flops.py)
    var_bytes: dict = field(default_factory=dict)  # variable -> bytes of the value an op gave it
    peak_at: int = 0                               # the allocation that reached the peak (its number)
    recomputed: list = field(default_factory=list)  # per op: a forward copy inserted by recompute

    def __repr__(self):
        return (f"MemoryEstimate(peak_bytes={self.peak_bytes}, peak_op={self.peak_op}, "
                f"persistable_bytes={self.persistable_bytes}, ops={len(self.profile)})")


class _Tracker:
    """The executor's accounting (runtime/memory.py) over simulated buffers.  ``snapshot`` is
    called at the acquire numbered ``snapshot_at`` (a second pass finds what is live at the peak
    without a copy of the whole environment at every new high)."""

    def __init__(self, snapshot=None, snapshot_at=-1):
        self.current = self.peak = self.high = 0   # high: the most reached since the step began
        self.count, self.peak_at = 0, 0
        self.snapshot, self.snapshot_at, self.at_peak = snapshot, snapshot_at, None

    def acquire(self, value):
        if not isinstance(value, Value):
            return
        buf = value.buffer
        buf.refs += 1
        if buf.refs == 1:
            self.current += buf.nbytes
            self.count += 1
            if self.current > self.high:
                self.high = self.current
            if self.current > self.peak:
                self.peak, self.peak_at = self.current, self.count
            if self.count == self.snapshot_at:
                self.at_peak = self.snapshot()

    def release(self, value):
        if not isinstance(value, Value):
            return
        buf = value.buffer
        buf.refs -= 1
        if buf.refs == 0:
            self.current -= buf.nbytes


def _feed_value(name, given, var) -> Value:
    if isinstance(given, np.ndarray):
        return Value(Buffer(root_of(given).nbytes), aliasing.proxy(given.shape, given.dtype, given.strides))
    if isinstance(given, (list, tuple)) and all(isinstance(d, (int, np.integer)) and d >= 0 for d in given):
        if var is None or var.dtype is None:
            raise FeedError(f"estimate: feed {name!r} is not a variable of the program")
        return Value.fresh(tuple(int(d) for d in given), var.dtype.numpy)
    raise FeedError(f"estimate: feed {name!r} must be an array or a shape (list of non-negative ints), "
                    f"got {given!r}")


def _infer(step, ins) -> dict:
    ctx = InferContext(step.op_type, step.op.callsite, ins, step.attrs)
    step.opdef.infer(ctx)
    return ctx.outs


def _pure_view(step, ins, outs_meta) -> dict:
    """Run a pure view kernel on layout proxies; each output views the input whose proxy it shares."""
    from ..ops.kernel import context

    kins, owners = {}, {}
    for slot, names, many in step.ins:
        layouts = [v.layout if isinstance(v, Value) else v for v in ins[slot]]
        for v in ins[slot]:
            if isinstance(v, Value):
                owners[id(root_of(v.layout))] = v
        kins[slot] = layouts if many else layouts[0]
    outs = step.opdef.kernel(kins, step.attrs, context([slot for slot, _, _ in step.outs]))
    result = {}
    for slot, names, many in step.outs:
        arrays = outs[slot] if many else [outs[slot]]
        values = []
        for arr in arrays:
            owner = owners.get(id(root_of(arr)))
            values.append(Value(owner.buffer, arr) if owner is not None else Value.fresh(arr.shape, arr.dtype))
        result[slot] = values
    return result


def _reshaped(layout, shape):
    """The layout of ``layout`` seen at ``shape`` (a pass-through of the same size)."""
    if tuple(layout.shape) == tuple(shape):
        return layout
    try:
        return np.reshape(layout, shape, copy=False)
    except ValueError:
        return aliasing.proxy(shape, layout.dtype)


def _fits(given, shape, dtype) -> bool:
    return (isinstance(given, Value) and given.shape == tuple(shape) and given.dtype == np.dtype(dtype)
            and (given._layout is None or given._layout.flags.c_contiguous))


def _outputs(step, ins, outs_meta, given) -> dict:
    """slot -> [Value] for the names the step stores."""
    opdef, op_type = step.opdef, step.op_type
    pure = aliasing.PURE_VIEW_KERNELS.get(op_type)
    if pure is not None and not any(ins.get(s) for s in pure):
        return _pure_view(step, ins, outs_meta)
    if aliasing.writes_inputs_in_place(opdef):
        sources = {out: [("input", inp, k) for k in range(len(outs_meta.get(out, ())))]
                   for out, inp in opdef.inplace.items()}
        layouts = {}
    elif op_type in aliasing.RULES:
        sources, layouts = aliasing.RULES[op_type](step.attrs, ins, outs_meta)
    elif opdef.views:
        raise NotImplementedError(f"memory estimate: op `{op_type}` declares views {opdef.views} but "
                                  "headrace/memory/aliasing.py has no rule saying when its output is a view")
    else:
        sources, layouts = {}, {}
    made = {}
    result = {}
    for slot, names, many in step.outs:
        values = []
        for k, (shape, dtype) in enumerate(outs_meta[slot][:len(names)]):
            src = sources.get(slot, [("buffer",)] * len(names))[k]
            if src[0] == "input":
                owner = ins[src[1]][src[2]]
                layout = layouts.get((slot, k))
                if layout is None and owner.shape == tuple(shape):
                    values.append(Value(owner.buffer, owner._layout, owner.shape, owner.dtype))
                else:
                    values.append(Value(owner.buffer, layout if layout is not None else _reshaped(owner.layout, shape)))
                continue
            # ("fresh", key) or ("buffer", [buffer slot, key]): one Value per key within the step
            buf_slot = src[1] if src[0] == "buffer" and len(src) > 1 else slot
            key = src[-1] if len(src) > 1 else ("slot", slot, k)
            value = made.get(key)
            if value is None or value.shape != tuple(shape):
                donor = given.get(buf_slot) if src[0] == "buffer" and opdef.buffers else None
                if _fits(donor, shape, dtype.numpy):
                    value = Value(donor.buffer, None, shape, dtype.numpy)
                else:
                    value = Value.fresh(shape, dtype.numpy)
                made[key] = value
            values.append(value)
        result[slot] = values
    return result


def _program_to_plan(program, build_strategy, feed_names, fetch_names):
    """The Program the Executor would run: the program itself, or what a CompiledProgram's passes
    make of it (one place)."""
    from ..runtime.compiled import CompiledProgram

    if build_strategy is not None:
        if not isinstance(program, Program):
            raise TypeError("estimate: pass a Program together with build_strategy, not a CompiledProgram")
        program = CompiledProgram(program, build_strategy)
    if isinstance(program, CompiledProgram):
        if program._num_places != 1:
            raise NotImplementedError("estimate: a data-parallel CompiledProgram is not supported yet; "
                                      "estimate one place with CompiledProgram(program, build_strategy)")
        return program._compile(feed_names, fetch_names)[0]
    if not isinstance(program, Program):
        raise TypeError(f"estimate: program must be a Program or CompiledProgram, got {type(program).__name__}")
    return program


def _fetch_names(fetch_list) -> tuple:
    if fetch_list is None:
        return ()
    if not isinstance(fetch_list, (list, tuple)):
        fetch_list = [fetch_list]
    return tuple(f if isinstance(f, str) else f.name for f in fetch_list)


def estimate(program, feed, build_strategy=None, fetch_list=None, live_at_peak=True) -> MemoryEstimate:
    """See the module docstring (``live_at_peak=False`` skips the second pass that finds it)."""
    if not isinstance(feed, dict):
        raise TypeError(f"estimate: feed must be a dict of name -> array or shape, got {type(feed).__name__}")
    fetch_names = _fetch_names(fetch_list)
    run = _program_to_plan(program, build_strategy, tuple(feed), fetch_names)
    plan = build_plan(run, tuple(feed), fetch_names)
    result = _Simulation(run, plan).run(feed)
    if live_at_peak:
        again = _Simulation(run, plan, snapshot_at=result.peak_at)
        again.run(feed)
        result.live_at_peak = again.tracker.at_peak or {}
    return result


class _Simulation:
    def __init__(self, program, plan, snapshot_at=-1):
        self.program, self.plan = program, plan
        self.block = program.global_block()
        self.tracker = _Tracker(self._snapshot, snapshot_at)
        self.env, self.scope, self.given = {}, {}, {}
        self.flops, self.var_bytes = [], {}

    def _store_persistable(self, name, value):
        old = self.scope.get(name)
        self.scope[name] = value
        self.tracker.acquire(value)
        if old is not None:
            self.tracker.release(old)

    def _snapshot(self):
        """variable -> bytes of the live buffers it holds (a shared buffer counted once)."""
        seen, live = set(), {}
        for source in (self.scope, self.env, self.given):
            for name, value in source.items():
                if isinstance(value, Value) and id(value.buffer) not in seen and value.buffer.refs > 0:
                    seen.add(id(value.buffer))
                    live[name] = value.buffer.nbytes
        return live

    def _persistables(self) -> int:
        for name in sorted(self.plan.persistables):
            var = self.block._find_var_recursive(name)
            if var is None or var.shape is None or any(d < 0 for d in var.shape):
                continue
            self._store_persistable(name, Value.fresh(var.shape, var.dtype.numpy))
        self._coalesced()
        for name in getattr(self.program, "_lr_schedulers", {}):   # the executor rewrites each rate first
            var = self.block._find_var_recursive(name)
            if var is not None:
                self._store_persistable(name, Value.fresh((1,), np.float32))
        return self.tracker.current

    def _coalesced(self) -> None:
        """Persistables a ``coalesce_tensor`` op made views of its flat buffer (fuse_all_optimizer_ops,
        after its first run) live in that buffer: counted once, with it."""
        for op in self.block.ops:
            if op.type != "coalesce_tensor" or not op.attrs.get("output_views", True):
                continue
            fused = self.scope.get((op.outputs.get("FusedOutput") or [None])[0])
            if fused is None:
                continue
            for name in op.inputs.get("Input", ()):
                value = self.scope.get(name)
                if value is not None and value.buffer is not fused.buffer:
                    self.tracker.release(value)
                    self.scope[name] = Value(fused.buffer, None, value.shape, value.dtype)
                    self.tracker.acquire(self.scope[name])

    def run(self, feed) -> MemoryEstimate:
        persistable_bytes = self._persistables()
        self.tracker.peak, self.tracker.peak_at = self.tracker.current, self.tracker.count
        if self.tracker.snapshot_at == self.tracker.count:
            self.tracker.at_peak = self._snapshot()
        env, plan, tracker = self.env, self.plan, self.tracker
        for name in plan.persist_reads:
            if name not in self.scope:
                raise FeedError(f"estimate: persistable {name!r} has no declared shape")
            env[name] = self.scope[name]
        for name, given in feed.items():
            value = _feed_value(name, given, self.block._find_var_recursive(name))
            if name in plan.persistables:
                self._store_persistable(name, value)
            else:
                tracker.acquire(value)
            env[name] = value
        peak_step, profile = -1, []
        for i, step in enumerate(plan.steps):
            before, tracker.high = tracker.peak, tracker.current
            self._step(step)
            if tracker.peak > before:
                peak_step = i
            profile.append((i, step.op_type, tracker.current, tracker.high))
        at_peak = {}
        peak_op = (peak_step, plan.steps[peak_step].op_type) if peak_step >= 0 else (-1, "feed")
        ops = [s.op for s in plan.steps]
        return MemoryEstimate(tracker.peak, peak_op, at_peak, persistable_bytes, profile,
                              [op.type for op in ops], [op.attrs.get("op_role", 0) for op in ops],
                              self.flops, self.var_bytes, tracker.peak_at,
                              [any(RECOMPUTE_MARK in n for n in op.output_arg_names) for op in ops])

    def _step(self, step):
        env, tracker, persist = self.env, self.tracker, self.plan.persistables
        ins = {slot: [env[n] for n in names] for slot, names, _ in step.ins}
        self.given = given = {}
        for slot, donor, meta_after in step.donors:
            value = given[slot] = env.pop(donor)
            if meta_after:
                env[donor] = Meta(value.shape, value.dtype)
        try:
            metas = _infer(step, ins)
        except HeadraceError as exc:
            raise type(exc)(f"estimate: {exc}") from exc
        outs = _outputs(step, ins, metas, given)
        self.flops.append(op_flops(step.op_type, ins, metas, step.attrs))
        for slot, names, _ in step.outs:
            for name, value in zip(names, outs[slot]):
                self.var_bytes.setdefault(name, value.nbytes)
                if name in persist:
                    self._store_persistable(name, value)
                    env[name] = value
                    continue
                old = env.get(name)
                env[name] = value
                tracker.acquire(value)
                if old is not None:
                    tracker.release(old)
        self.given = {}
        for value in given.values():
            tracker.release(value)
        for name in step.strips:
            value = env[name]
            env[name] = Meta(value.shape, value.dtype)
            tracker.release(value)
        for name in step.frees:
            tracker.release(env.pop(name))
