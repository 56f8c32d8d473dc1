"""Running a compiled program on its places: one thread per place, in one process.

1. Feeds: a dict is split along dim 0 as the reference does (batch 10 on 2 places -> 5 + 5,
   3 -> 2 + 1; the first places take the extra rows); a batch smaller than the number of places
   is an error.  Persistable feeds (e.g. a learning rate) go whole to every place.  A list of
   dicts gives each place its own feed.
2. Scopes: place 0 uses the caller's scope; every other place owns a private Scope holding its
   copy of the persistables (parameters, optimizer state, statistics), copied from place 0's
   scope before the first run and again whenever a value there is stored outside the group's runs
   (e.g. the startup program re-run, or a plain Executor step updating parameters in place: the
   scope counts stores).  State only another place writes (Reduce mode: the optimizer state of
   the parameters it owns) is copied back into the caller's scope after each run.
   ``share_vars_from``: the program uses the place scopes of the one shared from (so place k
   reads the parameters and statistics place k of that program holds); as the reference, the
   caller's scope is ignored (with a warning) when that program never ran with it.
3. Each place runs the executor's loop on its own plan with its own communicator installed
   (``ops.collective.using``); place 0 runs in the calling thread.  If one place fails, the
   group is aborted so no place waits forever, and the first real error is raised naming its place
   (of its own type; a Ctrl-C stays the ``KeyboardInterrupt``, raised once every place stopped).
   The places may have applied different parts of a failed step, so every place then takes place
   0's values (the caller's scope is the authoritative copy) before the next run.
4. Fetches: ``return_merged=True`` concatenates each fetch's per-place values along dim 0 (0-D
   values are stacked: a scalar loss comes back with shape (places,)); ``return_merged=False``
   gives, per fetch, the list of per-place values (as the reference).
"""
from __future__ import annotations

import threading
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.errors import FeedError
from ..ops.collective import using
from .collective import ThreadGroup
from .feeds import batch_mismatch
from .scope import LoDTensor, Scope, global_scope


def _written_only_here(plan0, plan) -> tuple:
    """Persistables ``plan`` writes and place 0's plan does not (cached on the plan: plans are
    cached per program version, feeds and fetches, so this runs once per plan)."""
    cached = getattr(plan, "_owned_state", None)
    if cached is None or cached[0] is not plan0:
        written_by_0 = {n for step in plan0.steps for n in step.op.output_arg_names}
        names = tuple(dict.fromkeys(n for step in plan.steps for n in step.op.output_arg_names
                                    if n in plan.persistables and n not in written_by_0))
        cached = plan._owned_state = (plan0, names)
    return cached[1]


class _PlaceScopes:
    """The private scopes of places >= 1 for one caller's scope, and what was last synced into
    them: ``{name: place 0's (array, store count)}`` after the last sync or successful run."""

    __slots__ = ("locals", "synced", "__weakref__")

    def __init__(self, n):
        self.locals = [Scope() for _ in range(n)]
        self.synced = {}


class ParallelRunner:
    def __init__(self, num_places: int, share_from: "ParallelRunner | None" = None):
        self.num_places = num_places
        self.group = ThreadGroup(num_places)
        self._pool = ThreadPoolExecutor(max_workers=num_places - 1) if num_places > 1 else None
        self._share_from = share_from
        # caller's scope -> its _PlaceScopes; weak: dropping the scope frees its place copies
        self._local_scopes = weakref.WeakKeyDictionary()
        self._last_scope = None   # weakref to the caller's scope of the latest run (what share_vars_from shares)

    # --- scopes ----------------------------------------------------------------------------------
    def _scopes(self, scope) -> list:
        scope, entry = self._entry(scope)
        return [scope] + entry.locals

    def _entry(self, scope) -> tuple:
        """``(place 0's scope, its _PlaceScopes)`` for the caller's ``scope``: the caller's own, or
        with ``share_vars_from`` those of the program shared from."""
        if self._share_from is not None:
            return self._shared_entry(scope)
        self._last_scope = weakref.ref(scope)
        entry = self._local_scopes.get(scope)
        if entry is None:
            entry = self._local_scopes[scope] = _PlaceScopes(self.num_places - 1)
        return scope, entry

    def _shared_entry(self, scope) -> tuple:
        """``share_vars_from``: the place scopes of the program shared from.  As the reference, the
        caller's scope is ignored when it is not one that program ran with (with a warning)."""
        source = self._share_from
        entry = source._local_scopes.get(scope)
        if entry is not None:
            return scope, entry
        last = source._last_scope() if source._last_scope is not None else None
        if last is None:
            raise ValueError("with_data_parallel: share_vars_from has not run yet (or the scope it ran "
                             "with is gone), so there are no variables to share; run it first")
        warnings.warn("share_vars_from is set: the scope passed to Executor.run is ignored; the places "
                      "use the scopes of the program shared from", stacklevel=7)
        return source._entry(last)

    def _sync_persistables(self, scope, entry, names) -> None:
        """Copy place 0's value of each persistable into the other places when it changed."""
        if not entry.locals:   # one place: nothing to copy
            return
        synced = entry.synced
        for name in names:
            mark = scope._write_mark(name)
            if mark is None:
                continue  # the executor reports it, naming the op that reads it
            seen = synced.get(name)
            if seen is not None and seen[0] is mark[0] and seen[1] == mark[1]:
                continue
            for local in entry.locals:
                local._set_array(name, mark[0].copy())
            synced[name] = mark

    @staticmethod
    def _remember(scope, entry, names) -> None:
        if not entry.locals:
            return
        for name in names:
            mark = scope._write_mark(name)
            if mark is not None:
                entry.synced[name] = mark

    # --- feeds ------------------------------------------------------------------------------------
    def _split_feeds(self, compiled, feed) -> list:
        n = self.num_places
        if isinstance(feed, (list, tuple)):
            if len(feed) != n:
                raise FeedError(f"a list of feeds needs one dict per place ({n}), got {len(feed)}")
            feeds = [dict(f) for f in feed]
            for k, f in enumerate(feeds[1:], 1):
                if sorted(f) != sorted(feeds[0]):
                    raise FeedError(f"a list of feeds needs the same names for every place: place {k} "
                                    f"feeds {sorted(f)}, place 0 feeds {sorted(feeds[0])}")
            return feeds
        if not isinstance(feed, dict):
            raise TypeError(f"Executor.run: feed must be a dict (or one dict per place), got "
                            f"{type(feed).__name__}")
        block = compiled.program.global_block()
        per_place = [{} for _ in range(n)]
        for name, value in feed.items():
            var = block._find_var_recursive(name) if isinstance(name, str) else None
            if isinstance(value, LoDTensor):
                value = np.asarray(value)
            if n == 1 or (var is not None and var.persistable):
                for k in range(n):
                    per_place[k][name] = value
                continue
            try:
                arr = np.asarray(value)
            except (ValueError, TypeError) as exc:
                raise FeedError(f"feed {name!r}: cannot be split across places: not an array ({exc}; "
                                "a ragged nested list?)") from None
            if arr.ndim == 0:
                raise FeedError(f"feed {name!r}: a 0-D value cannot be split across {n} places "
                                "(give it a leading batch dimension)")
            batch = arr.shape[0]
            if batch < n:
                raise FeedError(f"feed {name!r}: the batch ({batch} samples) is smaller than the number "
                                f"of places ({n}); every place needs at least one sample (set CPU_NUM "
                                "or places to fewer places, or feed a larger batch)")
            base, extra = divmod(batch, n)
            start = 0
            for k in range(n):
                size = base + (1 if k < extra else 0)
                part = arr[start:start + size]
                if var is not None and var.shape == () and part.shape == (1,):
                    part = part.reshape(())
                per_place[k][name] = part
                start += size
        return per_place

    # --- run --------------------------------------------------------------------------------------
    def run(self, compiled, executor, feed, fetch_list, scope, return_numpy, return_merged):
        scope = scope if scope is not None else global_scope()
        feeds = self._split_feeds(compiled, {} if feed is None else feed)
        fetch_names = executor._fetch_names(compiled.program, fetch_list)
        feed_names = tuple(sorted(feeds[0]))
        programs = compiled._compile(feed_names, fetch_names)
        loss_grad = _customized_grad_name(compiled)
        if loss_grad is not None:
            for k, f in enumerate(feeds):
                if loss_grad not in f:
                    raise FeedError(
                        f"gradient_scale_strategy is Customized, so the loss gradient {loss_grad!r} must "
                        f"be fed (shape ({self.num_places},): one value per place, split along dim 0); "
                        f"place {k}'s feed has only {sorted(f)}")
        plans, arrays = [], []
        for k, (program, f) in enumerate(zip(programs, feeds)):
            try:
                checked = executor._check_feed(program, f)
            except FeedError as err:
                if not compiled._data_parallel:
                    raise
                raise FeedError(f"on place {k} of {self.num_places}: {err}") from err
            arrays.append(checked)
            plans.append(executor._plan(program, tuple(checked), fetch_names))
        scope, entry = self._entry(scope)
        scopes = [scope] + entry.locals
        persist = sorted({n for plan in plans for n in plan.persist_reads})
        self._sync_persistables(scope, entry, persist)
        try:
            results = self._run_places(executor, plans, scopes, arrays)
        except BaseException as exc:
            # the places may have applied different parts of this step: every place takes place
            # 0's values (the caller's scope, the authoritative copy) before the next run
            entry.synced.clear()
            mismatch = batch_mismatch(compiled.program, feed, exc) if isinstance(feed, dict) else None
            if mismatch is not None and isinstance(exc, Exception):
                raise mismatch from exc
            raise
        self._collect_owned_state(plans, scopes)
        self._remember(scope, entry, persist)
        if not compiled._data_parallel:
            merged = results[0]
        elif return_merged:
            merged = [_merge([r[i] for r in results]) for i in range(len(fetch_names))]
        else:
            merged = [[r[i] for r in results] for i in range(len(fetch_names))]
        if return_numpy:
            return merged
        return [LoDTensor._untracked(m) if isinstance(m, np.ndarray) else [LoDTensor._untracked(v) for v in m]
                for m in merged]

    @staticmethod
    def _collect_owned_state(plans, scopes) -> None:
        """Reduce mode updates a parameter's optimizer state (velocity, moments...) only on its
        owner place: copy what places >= 1 alone wrote back into the caller's scope, so that scope
        (the one users save from) holds every current value."""
        if len(plans) < 2:
            return
        for plan, local in zip(plans[1:], scopes[1:]):
            for name in _written_only_here(plans[0], plan):
                value = local._get_array(name)
                if value is not None:
                    scopes[0]._set_array(name, value.copy())

    def _run_places(self, executor, plans, scopes, arrays) -> list:
        n = self.num_places
        group = self.group

        def one(k):   # several places run at once: no ledger (its stretches ignore the other places' bytes)
            with using(group.communicator(k)):
                return executor._run_plan(plans[k], scopes[k], arrays[k], ledgered=n == 1)

        if n == 1:
            return [one(0)]
        futures = [self._pool.submit(_guarded, one, k, group) for k in range(1, n)]
        outcomes = [_guarded(one, 0, group)] + _wait_all(futures, group)
        errors = [(k, err) for k, (ok, err) in enumerate(outcomes) if not ok]
        if errors:
            group.reset()
            real = [(k, e) for k, e in errors if not _broken_barrier(e)]
            k, err = (real or errors)[0]
            raise _placed(err, k, n) from err
        return [value for _, value in outcomes]


def _wait_all(futures, group) -> list:
    """The other places' outcomes.  A Ctrl-C while waiting aborts the group and still waits for
    every place to stop (none keeps running into the next step), then counts as place 0's error."""
    outcomes, interrupt = [], None
    for future in futures:
        while True:
            try:
                outcomes.append(future.result())
                break
            except KeyboardInterrupt as exc:
                interrupt = exc
                group.abort()
    if interrupt is not None:
        group.reset()
        raise interrupt
    return outcomes


def _placed(err, k, n) -> BaseException:
    """The error a failed place ``k`` raises to the caller: of the original's type (a Ctrl-C stays
    the KeyboardInterrupt itself), its message prefixed with the place."""
    if not isinstance(err, Exception):
        return err
    try:
        placed = type(err)(f"on place {k} of {n}: {err}")
    except Exception:  # noqa: BLE001 - a type whose constructor wants other arguments
        return RuntimeError(f"on place {k} of {n}: {type(err).__name__}: {err}")
    placed.headrace_op = getattr(err, "headrace_op", None)
    return placed


def _guarded(fn, k, group):
    try:
        return True, fn(k)
    except BaseException as exc:  # noqa: BLE001 - reported by the caller, naming the place
        group.abort()
        return False, exc


def _broken_barrier(exc) -> bool:
    """A place that only waited for a failed one (the executor wraps the barrier's error in a
    KernelError naming the collective op)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, threading.BrokenBarrierError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _merge(values):
    if all(v.ndim == 0 for v in values):
        return np.stack(values)
    return np.concatenate(values, axis=0)


def _customized_grad_name(compiled):
    from ..core.names import grad_name
    from ..passes.strategy import GradientScaleStrategy

    strategy = compiled._strategy()
    if compiled._loss_name is None or not compiled._data_parallel:
        return None
    if strategy.gradient_scale_strategy != GradientScaleStrategy.Customized:
        return None
    return grad_name(compiled._loss_name)
