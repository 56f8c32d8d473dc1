"""Byte accounting of a run from a ledger recorded on an earlier run: the executor's fast path.

The executor counts every live buffer in ``memory.cpu``.  Counting each array as a kernel makes
or drops it (``MemoryTracker.acquire``/``release``: a weak reference, a lock, a dict update) costs
about a microsecond per op: a third of a small model's step.  Yet for one plan and one feed
signature (each fed array's shape, dtype, strides and buffer size) what a run acquires and
releases repeats from run to run.  So:

- the first run of a plan for a signature is counted as always, and a ``Recorder`` beside the
  tracker follows the run's *own* buffers (the feeds and the temporaries, not the scope's
  persistables) and writes a ``Ledger``: per stretch of the run between two stores into the
  scope (the tracker counts those as always; an update stored back in place, as SGD's, changes
  nothing there and ends no stretch), how far the own bytes rise and where they end; per step,
  what its outputs must be for the ledger to hold (below);
- later runs with that signature count nothing per op (``replay``): at each store into the scope
  and at the end of the run, the stretch's rise and net change go into the tracker in one locked
  update (``MemoryTracker.bump``), and the run's own bytes leave it at the end.  Current and peak
  bytes are the same as if every array had been counted, to the byte (``memory.estimate`` and the
  tests compare them).

What each step's outputs must be (checked on every replayed step, before anything is stored): a
step whose outputs may share a buffer with its inputs (the op declares ``views``, the buffer plan
hands it buffers, an output overwrites a live variable or is one of its inputs) records, per
output, which input or handed buffer it shares its buffer with, or that it owns a new buffer of so
many bytes (and shares none); any other step records the size of each output's buffer: a kernel
output shares no buffer with anything else (check mode polices that, ``ops/step.py``).  A
persistable recorded as stored in place must be the array the variable holds.  A step
that does not match (an output size that depends on the data, a kernel that returned a copy where
it returned a view before) ends the replay: the run's own buffers go into the tracker as usual
and the rest of the run is counted array by array; the ledger is dropped and the next run records
a new one.  A run whose own buffers share one with the scope (a fed persistable, a view of a
parameter, a feed the tracker already counts) is never ledger-counted: its signature maps to None;
so is a signature whose replays stopped matching ``MAX_MISSES`` times (sizes that depend on the data).

A replay is exact only for a run that is alone: a stretch's rise is its own bytes' rise, which
cannot see another run's bytes changing in the meantime.  So the places of a data-parallel program
(``parallel.py``: several at once, on threads) neither record nor replay a ledger; they are counted
array by array.  Runs the user starts on several threads at once are not detected: their peak is
only as exact as the interleaving of the replayed stretches allows.

A replay that fails (an error, a Ctrl-C) counts the rise of the stretch under way as far as it got
(``Replay.leave``): none before its steps, up to step i while step i runs, all of it after the last
step (an error collecting the fetches, a Ctrl-C held through the updates).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import is_wrapped
from ..ops.kernel import root_of
from ..ops.registry import Meta
from .plan import run_kernel, take_donors

MAX_LEDGERS = 8
"""Feed signatures a plan keeps ledgers for (all dropped when a ninth one comes)."""
MAX_MISSES = 3
"""Replays of one signature's ledgers that may stop matching before that signature's runs are
counted array by array for good (until ``MAX_LEDGERS`` drops the plan's ledgers)."""

_ndarray = np.ndarray
NEW, INPUT, GIVEN = 0, 1, 2   # what a step's output shares its buffer with (``Recorder._relation``)
IN_PLACE = -1   # a step's check of a persistable output stored back in place


def feed_signature(plan, feed_arrays, tracker):
    """The key of the plan's ledger for these feeds, or None if the run cannot be ledger-counted."""
    key, roots = [], set()
    for name, arr in feed_arrays.items():
        root = arr if arr.base is None else root_of(arr)
        if name in plan.persistables or id(root) in roots or tracker.holds(root):
            return None
        roots.add(id(root))
        key.append((name, arr.shape, arr.dtype, arr.strides, root.nbytes))
    return tuple(key)


class Counting:
    """How one run of a plan counts its bytes, chosen once for the run (``start``).

    ``counter`` counts the run's arrays one by one (``acquire``/``release``/``release_all``): the
    ``recorder`` of a run that records the plan's ledger for its feeds, the tracker for a run
    counted array by array, None while ``replay`` counts the run from the ledger (until it stops
    matching: ``missed``)."""

    __slots__ = ("plan", "key", "tracker", "replay", "recorder", "counter")

    def __init__(self, plan, key, tracker, scope):
        self.plan, self.key, self.tracker = plan, key, tracker
        recorded = plan.ledgers.get(key) if key is not None else None
        self.replay = Replay(recorded, tracker) if recorded is not None else None
        self.recorder = Recorder(tracker, scope, plan.persistables) \
            if key is not None and key not in plan.ledgers else None
        self.counter = self.recorder if self.recorder is not None else (tracker if self.replay is None else None)

    def recorded(self) -> None:
        """The recording run's steps ended: its ledger is the plan's for its feeds (a plan with
        ``MAX_LEDGERS`` signatures drops them all first, and their misses)."""
        plan = self.plan
        if len(plan.ledgers) >= MAX_LEDGERS:
            plan.ledgers.clear()
            plan.ledger_misses.clear()
        plan.ledgers[self.key] = self.recorder.ledger()

    def missed(self) -> None:
        """The replay stopped matching its ledger: the ledger is dropped (the next run records a
        new one; after ``MAX_MISSES`` misses the signature is counted array by array for good),
        the run's own bytes leave the replay, and the tracker counts the rest of the run."""
        plan, key = self.plan, self.key
        misses = plan.ledger_misses[key] = plan.ledger_misses.get(key, 0) + 1
        if misses >= MAX_MISSES:
            plan.ledgers[key] = None   # its sizes keep changing (masked_select...): count array by array
        else:
            plan.ledgers.pop(key, None)
        self.replay.leave()
        self.counter = self.tracker


def start(plan, scope, feed_arrays, tracker, ledgered=True) -> Counting:
    """How a run of ``plan`` on ``feed_arrays`` counts its bytes in ``tracker``: from the plan's
    ledger for the feeds if it has one, else array by array (recording a ledger on the way when
    the feeds allow one).  ``ledgered=False``: array by array, no ledger recorded nor replayed
    (runs on several threads at once: a replay's stretch cannot see the other runs' bytes)."""
    return Counting(plan, feed_signature(plan, feed_arrays, tracker) if ledgered else None, tracker, scope)


class Ledger:
    """What a recorded run's own bytes did (see the module docstring)."""

    __slots__ = ("checks", "windows", "final", "marks", "stretches")

    def __init__(self, checks, windows, final, marks, stretches):
        # per step: an int (one output's size; IN_PLACE), a str (one output, the buffer handed for
        # that slot), a tuple of sizes, or Relations
        self.checks = checks
        self.windows = windows   # (rise, net) of the stretch ending at each store into the scope
        self.final = final       # (rise, net) of the stretch ending with the last step
        self.marks = marks       # per step: (rise, net) of its stretch so far when the step begins
        self.stretches = stretches   # per step: how many stretches ended before it began


class Relations(tuple):
    """A step's outputs as ``(kind, slot, index, nbytes)``: NEW (a buffer of nbytes of its own),
    INPUT (input ``slot``'s value, item ``index`` of a list slot) or GIVEN (handed buffer ``slot``)."""

    __slots__ = ()


class Recorder:
    """A recording run's accounting: the tracker's, with the run's own buffers followed beside it.

    The executor's loop calls ``acquire``/``release``/``release_all`` and ``store`` (a
    persistable output) as it would the tracker's and the scope's, and ``begin`` before each
    step's kernel."""

    def __init__(self, tracker, scope, persistables):
        self.tracker, self.scope, self.persist = tracker, scope, persistables
        self.live = {}   # id(root) -> [root, holders]: the run's own buffers
        self.cur = self.start = self.high = 0
        self.ok = True
        self.checks, self.windows, self.marks, self.stretches = [], [], [], []
        self.step = self.ins = self.given = self.env = None
        self.outputs = []

    # --- the tracker's interface --------------------------------------------------------------
    def acquire(self, value) -> None:
        if type(value) is _ndarray or isinstance(value, _ndarray):
            root = root_of(value)
            entry = self.live.get(id(root))
            if entry is not None and entry[0] is root:
                entry[1] += 1
            else:
                if self.tracker.holds(root):
                    self.ok = False   # shares a buffer with the scope (or another run)
                self.live[id(root)] = [root, 1]
                self.cur += root.nbytes
                self.high = max(self.high, self.cur)
            if self.step is not None:
                self._output(root)
        self.tracker.acquire(value)

    def release(self, value) -> None:
        root = root_of(value)
        entry = self.live.get(id(root))
        if entry is not None and entry[0] is root:
            entry[1] -= 1
            if entry[1] == 0:
                del self.live[id(root)]
                self.cur -= root.nbytes
        self.tracker.release(value)

    def release_all(self, values) -> None:
        for value in values:
            self.release(value)

    def store(self, name, value) -> None:
        """A persistable output stored into the scope: the stretch recorded so far ends here,
        unless it is the array the variable holds (updated in place: the tracker does nothing)."""
        if value is self.env.get(name):
            self.outputs.append(IN_PLACE)
            self.scope._set_array(name, value)
            return
        self.windows.append((self.high - self.start, self.cur - self.start))
        self.start = self.high = self.cur
        root = root_of(value)
        entry = self.live.get(id(root))
        if entry is not None and entry[0] is root:
            self.ok = False   # the scope would hold one of the run's own buffers
        self._output(root)
        self.scope._set_array(name, value)

    # --- steps ----------------------------------------------------------------------------------
    def begin(self, step, ins, given, env) -> None:
        """Step ``step`` runs on ``ins`` with the buffers ``given`` (None: none)."""
        self._close_step()
        self.marks.append((self.high - self.start, self.cur - self.start))
        self.stretches.append(len(self.windows))
        inputs = {n for _, names, _ in step.ins for n in names}
        related = bool(step.opdef.views or step.donors) or any(
            name not in self.persist and (name in env or name in inputs) for name in step.out_names)
        self.step, self.ins, self.given, self.env = step, (ins if related else None), (given or {}), env

    def _output(self, root) -> None:
        if self.ins is not None:
            self.outputs.append(self._relation(root))
            return
        entry = self.live.get(id(root))
        if entry is not None and entry[0] is root and entry[1] > 1:
            self.ok = False   # an unrelated step's output shares a buffer: not what check mode allows
        self.outputs.append(root.nbytes)

    def _relation(self, root) -> tuple:
        for slot, value in self.given.items():   # first: a handed input buffer is also an input
            if root_of(value) is root:
                return (GIVEN, slot, -1, 0)
        for slot, names, many in self.step.ins:
            values = self.ins[slot] if many else (self.ins[slot],)
            for j, value in enumerate(values):
                if root_of(value) is root:
                    return (INPUT, slot, j if many else -1, 0)
        entry = self.live.get(id(root))
        if entry is not None and entry[0] is root and entry[1] > 1:
            self.ok = False   # shares a buffer with a value that is not one of the step's inputs
        return (NEW, None, -1, root.nbytes)

    def _close_step(self) -> None:
        if self.step is None:
            return
        if self.step.single is not None and (self.ins is None or self.outputs == [IN_PLACE]):
            self.checks.append(self.outputs[0])
        elif self.ins is not None:
            self.checks.append(Relations(self.outputs))
        else:
            self.checks.append(tuple(self.outputs))
        self.outputs = []

    def ledger(self):
        """The recorded ledger (None if this run's own buffers were not its own alone)."""
        self._close_step()
        if not self.ok:
            return None
        return Ledger(self.checks, self.windows, (self.high - self.start, self.cur - self.start), self.marks,
                      self.stretches)


class Replay:
    """Where a replayed run is: the step running, the stretches applied to the tracker.

    ``index`` is how far the run got: -1 until its steps begin (the feeds are not counted yet:
    they belong to the first stretch), i while step i runs, the number of steps after the last."""

    __slots__ = ("ledger", "tracker", "index", "window", "applied", "active")

    def __init__(self, ledger, tracker):
        self.ledger, self.tracker = ledger, tracker
        self.index = -1
        self.window = self.applied = 0
        self.active = True   # the ledger counts the run's own bytes (until ``leave``)

    def flush(self) -> None:
        """Apply the next recorded stretch (a store into the scope follows)."""
        rise, net = self.ledger.windows[self.window]
        self.window += 1
        self.applied += net
        if rise or net:
            self.tracker.bump(rise, net)

    def leave(self) -> None:
        """Take the run's own bytes out of the tracker, after counting how far they rose in the
        stretch under way as far as the run got (``index``): what counting array by array would
        have counted before the run's end, its error, or the step that stopped matching."""
        ledger, i = self.ledger, self.index
        if i < 0:
            rise = 0   # failed before its steps: nothing of its own was counted yet
        elif i >= len(ledger.marks):
            rise = ledger.final[0]   # after the last step (an error collecting fetches, a held Ctrl-C)
        elif self.window == ledger.stretches[i]:
            rise = ledger.marks[i][0]   # inside step i: the stretch's rise before it
        else:
            rise = 0   # step i stored into the scope, ending the stretch: nothing rose since
        if rise or self.applied:
            self.tracker.bump(rise, -self.applied)
        self.applied, self.active = 0, False


def replay(plan, env, scope, state):
    """Run the plan's steps with ledger ``state.ledger`` (module docstring).  Returns None when
    every step matched it, else ``(step index, inputs, kernel outputs, handed buffers)`` of the
    first one that did not: its kernel ran, none of its outputs is stored."""
    persist, set_array, checks = plan.persistables, scope._set_array, state.ledger.checks
    i = 0
    try:
        for i, step in enumerate(plan.steps):
            ins = {}
            for slot, names, many in step.ins:
                ins[slot] = [env[n] for n in names] if many else env[names[0]]
            given = None
            try:
                if step.donors:
                    given = {}
                    take_donors(step.donors, env, given)
                outs = run_kernel(step, ins, given)
                check = checks[i]
                if type(check) is int:   # one output, its buffer's size (the common case, inlined)
                    value, name = outs[step.single], step.out_names[0]
                    if type(value) is not _ndarray:
                        value = np.asarray(value)
                    if name in persist:
                        if check != IN_PLACE:
                            state.flush()
                        elif value is not env.get(name):
                            return i, ins, outs, given
                        set_array(name, value)
                    elif (value.nbytes if value.base is None else root_of(value).nbytes) != check:
                        return i, ins, outs, given
                    env[name] = value
                elif not (_store_one if step.single is not None else _store)(
                        step, outs, check, ins, given, env, persist, state, set_array):
                    return i, ins, outs, given
            except Exception as exc:
                if is_wrapped(exc):
                    raise
                raise step.error(exc, ins) from exc
            for name in step.strips:
                value = env[name]
                env[name] = Meta(value.shape, value.dtype)
            for name in step.frees:
                del env[name]
        i = len(plan.steps)   # every step ran: what follows (fetches, a held Ctrl-C) is after them
    finally:
        state.index = i   # where the run stopped if it fails (``Replay.leave``)
    return None


def _store_one(step, outs, check, ins, given, env, persist, state, set_array) -> bool:
    """``_store`` of a step with one output that may share a buffer with an input."""
    value = outs[step.single]
    if type(value) is not _ndarray:
        value = np.asarray(value)
    if not _related(value, check[0], ins, given):
        return False
    name = step.out_names[0]
    if name in persist:   # not in place (that is an int check)
        state.flush()
        set_array(name, value)
    env[name] = value
    return True


def _store(step, outs, check, ins, given, env, persist, state, set_array) -> bool:
    """Store a step's outputs if each is what the ledger says (else store none: False)."""
    values = step.flat_outputs(outs)
    related = type(check) is Relations
    for name, value, expect in zip(step.out_names, values, check):
        if expect == IN_PLACE:
            if value is not env.get(name):
                return False
        elif related:
            if not _related(value, expect, ins, given):
                return False
        elif name not in persist and (value.nbytes if value.base is None else root_of(value).nbytes) != expect:
            return False
    for name, value, expect in zip(step.out_names, values, check):
        if name in persist:
            if expect != IN_PLACE:
                state.flush()
            set_array(name, value)
        env[name] = value
    return True


def _related(value, rel, ins, given) -> bool:
    """Whether output ``value`` shares its buffer as ``rel`` says (``Relations``)."""
    kind, slot, j, nbytes = rel
    if kind == INPUT:
        source = ins[slot] if j < 0 else ins[slot][j]
        return value is source or root_of(value) is root_of(source)
    if kind == GIVEN:
        source = given.get(slot) if given is not None else None
        return value is source or (source is not None and root_of(value) is root_of(source))
    root = root_of(value)
    if root.nbytes != nbytes:
        return False
    for item in ins.values():
        for v in (item if type(item) is list else (item,)):
            if v is root or (getattr(v, "base", None) is not None and root_of(v) is root):
                return False
    return given is None or all(root_of(v) is not root for v in given.values())
