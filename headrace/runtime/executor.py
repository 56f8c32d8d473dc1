"""Executor: check feeds, loop over a cached plan, free dead values, return fetches.

Ops run strictly in program order.  Every non-persistable value is released right after its last
use (eager deletion); values a later op reads only for their shape are stripped to a shape-only
placeholder.  Live bytes are counted in ``runtime.memory``: array by array, or from the plan's
ledger for the run's feeds once it has one (``runtime/ledger.py``).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..core import context, flags
from ..core.fetched import scalar_like
from ..core.errors import (DTypeError, FeedError, FetchError, ShapeError, UninitializedError, fmt_shape, is_wrapped,
                           where)
from ..core.program import Program
from ..core.variable import Variable
from ..ops.registry import Meta
from . import interrupt, ledger, memory
from .feeds import batch_mismatch, from_python
from .places import CPUPlace, check_runnable
from .plan import build_plan, run_kernel, take_donors
from .scope import LoDTensor, global_scope


PLAN_CACHE_SIZE = 16
"""How many Programs an Executor keeps plans for (least recently run dropped first)."""


class Executor:
    """Runs Programs on a place (``CPUPlace()``; a ``CUDAPlace`` fails at ``run``).

    Plans are cached for the ``PLAN_CACHE_SIZE`` (16) most recently run Programs; a cached plan
    keeps its Program alive.  ``close()`` drops every cached plan."""

    def __init__(self, place=None):
        self.place = place if place is not None else CPUPlace()
        self._plans: OrderedDict = OrderedDict()  # id(program) -> (program, {key: plan}), LRU order

    def close(self) -> None:
        """Drop the cached plans (and so the Programs they keep alive)."""
        self._plans.clear()

    # --- public entry --------------------------------------------------------------------------
    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed",
            fetch_var_name="fetch", scope=None, return_numpy=True, use_program_cache=False,
            return_merged=True):
        check_runnable(self.place)
        if program is None:
            program = context.default_main_program()
        _refresh_learning_rates(program, scope if scope is not None else global_scope())
        runner = getattr(program, "_run_with_executor", None)
        if runner is not None:  # CompiledProgram and friends
            results = runner(self, feed=feed, fetch_list=fetch_list, scope=scope,
                             return_numpy=return_numpy, return_merged=return_merged)
            return [scalar_like(r) for r in results] if return_numpy else results
        if not isinstance(program, Program):
            raise TypeError(f"Executor.run: program must be a Program, got {type(program).__name__}")
        scope = scope if scope is not None else global_scope()
        feed = {} if feed is None else feed
        if isinstance(feed, (list, tuple)) and len(feed) == 1:
            feed = feed[0]   # one feed dict per place (what DataLoader yields); a Program has one place
        elif isinstance(feed, (list, tuple)):
            raise TypeError(f"Executor.run: feed must be a dict of name -> array (or a list of one, one dict "
                            f"per place), got a {type(feed).__name__} of {len(feed)}: a Program runs on one "
                            "place; to feed one dict per place run CompiledProgram(program)"
                            ".with_data_parallel(places=...)")
        if not isinstance(feed, dict):
            raise TypeError(f"Executor.run: feed must be a dict of name -> array, got {type(feed).__name__}")
        fetch_names = self._fetch_names(program, fetch_list)
        feed_arrays = self._check_feed(program, feed)
        plan = self._plan(program, tuple(feed_arrays), fetch_names)
        try:
            results = self._run_plan(plan, scope, feed_arrays)
        except Exception as exc:
            mismatch = batch_mismatch(program, feed_arrays, exc)
            if mismatch is not None:
                raise mismatch from exc
            raise
        if return_numpy:
            return [scalar_like(r) for r in results]   # size-1 values also convert to scalars
        return [LoDTensor._untracked(r) for r in results]

    # --- plans -----------------------------------------------------------------------------------
    def _plan(self, program, feed_names, fetch_names):
        plans = self._plans
        entry = plans.get(id(program))
        if entry is None or entry[0] is not program:
            entry = plans[id(program)] = (program, {})
            while len(plans) > PLAN_CACHE_SIZE:
                plans.popitem(last=False)
        elif next(reversed(plans)) != id(program):
            plans.move_to_end(id(program))
        key = (program._version, feed_names, fetch_names, flags.nan_inf_level(), flags.buffer_reuse())
        plan = entry[1].get(key)
        if plan is None:
            entry[1].clear()  # plans of older versions are stale
            plan = entry[1][key] = build_plan(program, feed_names, fetch_names)
        return plan

    # --- feeds and fetches -------------------------------------------------------------------------
    @staticmethod
    def _fetch_names(program, fetch_list) -> tuple:
        if fetch_list is None:
            return ()
        if isinstance(fetch_list, (Variable, str)):
            fetch_list = [fetch_list]
        names = []
        for item in fetch_list:
            if isinstance(item, Variable):
                owner = item.block.program
                if owner is not program and owner._lineage is not program._lineage:
                    raise FetchError(f"cannot fetch variable {item.name!r}: it belongs to another "
                                     "program than the one being run (nor is either a clone of the other)")
                if owner is not program and program.global_block()._find_var_recursive(item.name) is None:
                    raise FetchError(f"cannot fetch variable {item.name!r}: the program being run is a "
                                     "clone without it (clone(for_test=True) drops backward and "
                                     "optimizer variables)")
                names.append(item.name)
            elif isinstance(item, str):
                if program.global_block()._find_var_recursive(item) is None:
                    raise FetchError(f"cannot fetch {item!r}: the program has no variable of that name")
                names.append(item)
            else:
                raise TypeError(f"fetch_list entries must be Variables or names, got {type(item).__name__}")
        return tuple(names)

    @staticmethod
    def _check_feed(program, feed: dict) -> dict:
        block = program.global_block()
        arrays = {}
        for name, value in feed.items():
            if not isinstance(name, str):
                raise FeedError(f"feed keys must be variable names, got {name!r}")
            var = block._find_var_recursive(name)
            if var is None:
                data_vars = sorted(v.name for v in program.list_vars() if v.is_data)
                raise FeedError(f"feed {name!r} is not a variable of this program; its data "
                                f"variables are {data_vars}")
            arrays[name] = _feed_array(var, value)
        return arrays

    # --- the loop: prepare feeds, run steps (run, store, free), collect fetches ------------------
    @staticmethod
    def _run_plan(plan, scope, feed_arrays, ledgered=True) -> list:
        """Run ``plan``, its bytes counted in ``memory.cpu`` as ``ledger.start`` decides: from the
        plan's ledger for these feeds, or array by array (``ledgered=False``: never a ledger)."""
        env, run = {}, ledger.start(plan, scope, feed_arrays, memory.cpu, ledgered)
        try:
            _prepare(plan, scope, feed_arrays, env, run.counter)
            if plan.updates and interrupt.install():
                try:
                    _run_steps_counted(plan, env, scope, run)
                finally:
                    interrupt.restore()
            else:
                _run_steps_counted(plan, env, scope, run)
            return _collect(plan, env, scope)
        finally:
            if run.replay is not None and run.replay.active:   # a replay ended (its end, or an error)
                run.replay.leave()
                env.clear()
            _release_env(env, plan.persistables, run.tracker)


def _run_steps_counted(plan, env, scope, run):
    """The steps, from the ledger (``run.replay``) or array by array (``run.counter``: recording a
    ledger when ``run.recorder`` is set); a replay that stops matching its ledger counts the rest
    array by array (``Counting.missed``)."""
    if run.replay is None:
        _run_steps(plan, env, scope, run)
        if run.recorder is not None:
            run.recorded()
        return
    stopped = ledger.replay(plan, env, scope, run.replay)
    if stopped is not None:
        run.missed()
        _resume(plan, env, scope, run, *stopped)


def _prepare(plan, scope, feed_arrays, env, counter) -> None:
    """Fill the run's environment: persistables read from the scope, then the feeds (counted by
    ``counter``'s ``acquire``, if any)."""
    for name in plan.persist_reads:
        arr = scope._get_array(name)
        if arr is None:
            op = next(s.op for s in plan.steps if name in s.op.input_arg_names)
            raise UninitializedError(
                f"{where(op.type, op.callsite)}: variable {name!r} has no value in the scope; "
                "run the startup program first (exe.run(startup_program))")
        expect = plan.persist_expect.get(name)
        if expect is not None and (arr.shape != expect[0] or arr.dtype != expect[1]):
            _wrong_value(plan, name, arr, expect)
        env[name] = arr
    for name, arr in feed_arrays.items():
        if name in plan.persistables:
            scope._set_array(name, arr)
            env[name] = arr
        else:
            env[name] = arr   # in env first: an interrupt in between leaves nothing counted for good
            if counter is not None:
                counter.acquire(arr)


def _wrong_value(plan, name, arr, expect) -> None:
    """A persistable's scope value (set by hand?) does not have its variable's shape or dtype."""
    op = next(s.op for s in plan.steps if name in s.op.input_arg_names)
    error = ShapeError if arr.shape != expect[0] else DTypeError
    raise error(f"{where(op.type, op.callsite)}: variable {name!r} is declared with shape {fmt_shape(expect[0])} "
                f"dtype {np.dtype(expect[1]).name}, but its value in the scope has shape {fmt_shape(arr.shape)} dtype "
                f"{arr.dtype} (was it set by hand?)")


def _run_steps(plan, env, scope, run, first=0) -> None:
    """Each step from ``first`` on: run its kernel (with its planned buffers), store its outputs
    (``_store_outputs``), then strip and free what is dead after it; counted by ``run.counter``
    (``ledger.Counting``: the recorder of a run that records a ledger, else the tracker)."""
    counter, rec = run.counter, run.recorder
    acquire, release, release_all = counter.acquire, counter.release, counter.release_all
    set_array = rec.store if rec is not None else scope._set_array
    persist = plan.persistables
    for step in (plan.steps[first:] if first else plan.steps):
        ins = {}
        for slot, names, many in step.ins:   # Step.gather, inlined
            ins[slot] = [env[n] for n in names] if many else env[names[0]]
        given = None
        try:
            if step.donors:
                given = {}
                take_donors(step.donors, env, given)
            if rec is not None:
                rec.begin(step, ins, given, env)
            _store_outputs(step, run_kernel(step, ins, given), env, persist, set_array, acquire, release)
        except Exception as exc:
            if is_wrapped(exc):
                raise
            raise step.error(exc, ins) from exc
        finally:
            if given:   # stored by now (possibly in these very buffers), or the step failed
                for value in given.values():
                    release(value)
        _drop_dead(step, env, release, release_all)


def _store_outputs(step, outs, env, persist, set_array, acquire, release) -> None:
    """Store a step's kernel outputs ``outs``: a persistable in the scope (``set_array``) and
    ``env``, any other in ``env``, counted (``acquire``; the value it replaces ``release``d)."""
    for name, value in zip(step.out_names, step.flat_outputs(outs)):
        if name in persist:
            set_array(name, value)
            env[name] = value
            continue
        old = env.get(name)
        env[name] = value
        acquire(value)
        if old is not None:
            release(old)


def _resume(plan, env, scope, run, index, ins, outs, given) -> None:
    """Count the rest of a run array by array (``run.counter``) from step ``index``, whose kernel
    ran on ``ins`` (with the buffers ``given``) in a replay that stopped matching its ledger there:
    the run's own buffers are counted, the step's outputs ``outs`` stored, the steps after it run
    in ``_run_steps``."""
    counter, step = run.counter, plan.steps[index]
    for name, value in env.items():
        if name not in plan.persistables:
            counter.acquire(value)
    for value in (given or {}).values():
        counter.acquire(value)
    try:
        _store_outputs(step, outs, env, plan.persistables, scope._set_array, counter.acquire, counter.release)
    except Exception as exc:
        if is_wrapped(exc):
            raise
        raise step.error(exc, ins) from exc
    finally:
        for value in (given or {}).values():
            counter.release(value)
    _drop_dead(step, env, counter.release, counter.release_all)
    _run_steps(plan, env, scope, run, index + 1)


def _drop_dead(step, env, release, release_all) -> None:
    """After ``step``: strip to a shape placeholder what later steps read only for its shape,
    free what no later step reads."""
    for name in step.strips:
        value = env[name]
        env[name] = Meta(value.shape, value.dtype)
        release(value)
    if step.frees:
        release_all([env.pop(name) for name in step.frees])


def _collect(plan, env, scope) -> list:
    results = []
    for name in plan.fetch_names:
        value = env.get(name)
        if value is None:  # a persistable no op of this program reads: fetch it from the scope
            value = scope._get_array(name)
            if value is None:
                raise UninitializedError(f"cannot fetch {name!r}: it has no value in the scope "
                                         "(run the startup program first)")
        if name in plan.persistables or value.base is not None:
            value = value.copy()
        results.append(value)
    return results


def _refresh_learning_rates(program, scope) -> None:
    """Write each LR scheduler's current rate into its learning-rate variable (the optimizer
    registers them on the program; ``scheduler.step()`` is the user's call, as in the reference)."""
    program = getattr(program, "_program", program)  # a CompiledProgram wraps its Program
    for name, scheduler in getattr(program, "_lr_schedulers", {}).items():   # not a Program: run() says so
        scope._set_array(name, np.array([scheduler()], dtype=np.float32))


def _release_env(env, persist, tracker) -> None:
    release = tracker.release
    for name, value in env.items():
        if name not in persist:
            release(value)


def _feed_array(var, value) -> np.ndarray:
    if isinstance(value, LoDTensor):
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:   # e.g. a fetched ScalarArray
        value = value.view(np.ndarray)
    want = var.dtype.numpy
    if isinstance(value, np.ndarray):
        if value.dtype != want:
            raise FeedError(f"feed {var.name!r}: expected dtype {var.dtype}, got {value.dtype} "
                            f"(convert with .astype('{var.dtype}'))")
        arr = value
    else:
        arr = from_python(var, value)
    shape = var.shape
    if len(arr.shape) != len(shape) or any(d != -1 and d != a for d, a in zip(shape, arr.shape)):
        raise FeedError(f"feed {var.name!r}: expected shape {fmt_shape(shape)}, got {fmt_shape(arr.shape)}")
    return arr
