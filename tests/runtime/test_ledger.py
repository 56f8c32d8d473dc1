"""The executor's ledger (runtime/ledger.py): runs counted from a recorded ledger report the same
current and peak bytes as runs counted array by array, and fall back when the record does not hold."""
import gc
import os
import signal
import sys

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace import memory as memory_estimate
from headrace.ops.kernel import KernelContext
from headrace.ops.registry import lookup
from headrace.runtime import ledger, memory
from headrace.runtime.memory import MemoryTracker
from headrace.runtime.scope import Scope, scope_guard

from ..memory.nets import build


@pytest.fixture(autouse=True)
def static_mode():
    paddle.enable_static()
    yield


def _plan(exe):
    """The one plan with feeds ``exe`` keeps (a CompiledProgram runs the program its passes made;
    the startup program has no feeds)."""
    plan, = [p for _, entry in exe._plans.values() for p in entry.values() if p.feed_names]
    return plan


def _ledgers(exe):
    return _plan(exe).ledgers


def _peaks(exe, program, feeds, fetch):
    """(peak above the bytes held before, bytes held after) of each run of ``program`` on ``feeds``."""
    out = []
    for feed in feeds:
        gc.collect()
        before = memory.memory_allocated()
        memory.reset_max_memory_allocated()
        exe.run(program, feed=feed, fetch_list=fetch)
        out.append((memory.max_memory_allocated() - before, memory.memory_allocated() - before))
    return out


@pytest.mark.parametrize("name", ["mlp", "conv_bn", "transformer"])
@pytest.mark.parametrize("variant", ["plain", "checkpoints", "passes"])
def test_replayed_runs_count_what_the_estimate_says(name, variant):
    main, startup, loss, feed = build(name, variant == "checkpoints")
    program, strategy = main, None
    if variant == "passes":
        strategy = static.BuildStrategy()
        strategy.enable_inplace = True
        strategy.memory_optimize = True
        program = static.CompiledProgram(main, strategy)
    est = memory_estimate.estimate(main, feed, build_strategy=strategy, fetch_list=[loss])
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        runs = _peaks(exe, program, [feed] * 3, [loss])
        ledgers = _ledgers(exe)
    assert len(ledgers) == 1 and None not in ledgers.values()   # runs 2 and 3 replayed a ledger
    # the estimate counts the persistables too: the runs' peaks are above them
    assert [peak for peak, _ in runs] == [est.peak_bytes - est.persistable_bytes] * 3
    assert [held for _, held in runs] == [0, 0, 0]


def _masked_net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [64, 16], "float32")
        h = paddle.tanh(x) * 2.0
        picked = paddle.masked_select(h, x > 0)       # its size depends on the data
        out = paddle.sum(paddle.exp(paddle.tile(picked, [8])) * 3.0)   # the peak: 8 copies of it
    return main, startup, out


def test_an_output_size_that_depends_on_the_data_falls_back_exactly():
    main, startup, out = _masked_net()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16)).astype("float32")
    feeds = [{"x": x}, {"x": x.copy()}, {"x": np.abs(x)}, {"x": np.abs(x)}]   # run 3 picks every element
    exe = static.Executor()
    exe.run(startup)
    runs = _peaks(exe, main, feeds, [out])
    # each run counted array by array on a fresh executor (a first run records, never replays)
    fresh = [_peaks(static.Executor(), main, [f], [out])[0] for f in feeds]
    assert runs == fresh
    assert runs[1] == runs[0] and runs[2][0] > runs[0][0] and all(held == 0 for _, held in runs)
    assert None not in _ledgers(exe).values()   # run 3 dropped the ledger, run 4 made a new one


def test_a_view_of_a_parameter_is_never_ledger_counted():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [8, 16], "float32")
        w = static.create_parameter([16, 16], "float32")
        out = paddle.sum(paddle.matmul(x, paddle.reshape(w, [16, 16]))) + paddle.sum(paddle.transpose(w, [1, 0]))
    exe = static.Executor()
    exe.run(startup)
    feed = {"x": np.ones((8, 16), "float32")}
    runs = _peaks(exe, main, [feed] * 3, [out])
    assert runs == [runs[0]] * 3 and runs[0][1] == 0
    assert list(_ledgers(exe).values()) == [None]


def test_feeds_sharing_a_buffer_are_counted_array_by_array():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a = static.data("a", [4, 8], "float32")
        b = static.data("b", [4, 8], "float32")
        out = paddle.sum(a * b)
    exe = static.Executor()
    exe.run(startup)
    base = np.ones((8, 8), "float32")
    shared = {"a": base[:4], "b": base[4:]}
    runs = _peaks(exe, main, [shared] * 3, [out])
    assert runs == [(base.nbytes + 4 * 8 * 4, 0)] * 3   # the feeds' one buffer counted once, then a * b
    assert _ledgers(exe) == {}
    separate = {"a": np.ones((4, 8), "float32"), "b": np.ones((4, 8), "float32")}
    assert _peaks(exe, main, [separate] * 3, [out]) == [(3 * 4 * 8 * 4, 0)] * 3


def test_an_error_during_a_replay_leaves_nothing_counted(monkeypatch):
    main, startup, loss, feed = build("mlp")
    opdef = lookup("relu")
    real, armed = opdef.kernel, {"on": False}

    def kernel(ins, attrs, ctx):
        if armed["on"]:
            raise FloatingPointError("boom")
        return real(ins, attrs, ctx)

    monkeypatch.setattr(opdef, "kernel", kernel)   # before the plan is made: its steps keep it
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        good = _peaks(exe, main, [feed] * 2, [loss])
        armed["on"] = True
        before = memory.memory_allocated()
        with pytest.raises(FloatingPointError, match=r"op `relu` \(built at tests/memory/nets.py:\d+\).*boom"):
            exe.run(main, feed=feed, fetch_list=[loss])
        gc.collect()
        assert memory.memory_allocated() == before
        armed["on"] = False
        assert _peaks(exe, main, [feed], [loss]) == good[:1]


def test_data_parallel_places_count_array_by_array_and_release_everything(monkeypatch):
    """Places run at once on threads: a replayed stretch cannot see the other places' bytes (nor
    that the split feeds share one buffer), so they are never ledger-counted: their peaks are what
    counting array by array gives (a replay reported ~40% less for this MLP)."""
    main, startup, loss, feed = build("mlp", batch=32)

    def runs():
        compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                                   places=static.cpu_places(2))
        with scope_guard(Scope()):
            exe = static.Executor()
            exe.run(startup)
            losses = [exe.run(compiled, feed=feed, fetch_list=[loss])[0]]   # makes place 1's scope
            gc.collect()
            before = memory.memory_allocated()
            peaks = _peaks(exe, compiled, [feed] * 4, [loss])
            gc.collect()
            assert memory.memory_allocated() == before
            losses += [exe.run(compiled, feed=feed, fetch_list=[loss])[0]]
            plans = [p for _, entry in exe._plans.values() for p in entry.values() if p.feed_names]
        return peaks, plans, losses

    switch = sys.getswitchinterval()
    sys.setswitchinterval(10.0)   # threads switch only where a place waits (its collectives): same order
    try:
        with monkeypatch.context() as patched:
            _without_ledgers(patched)
            counted, _, _ = runs()
        peaks, plans, losses = runs()
    finally:
        sys.setswitchinterval(switch)
    assert peaks == counted and peaks == [peaks[0]] * 4
    assert len(plans) == 2 and all(p.ledgers == {} for p in plans)
    assert np.all(np.isfinite(losses)) and len({np.asarray(v).tobytes() for v in losses}) == 2   # it trains


def _without_ledgers(monkeypatch):
    """Count every later run array by array (no feed signature: no ledger)."""
    monkeypatch.setattr(ledger, "feed_signature", lambda *args: None)


def _measure(run):
    """(peak above the bytes held before, bytes held after, "ok" or the error's type) of ``run()``."""
    gc.collect()
    before = memory.memory_allocated()
    memory.reset_max_memory_allocated()
    try:
        run()
        outcome = "ok"
    except (Exception, KeyboardInterrupt) as exc:   # noqa: BLE001 - its type is compared
        outcome = type(exc).__name__
    gc.collect()
    return memory.max_memory_allocated() - before, memory.memory_allocated() - before, outcome


def _armed_runs(startup, main, feed, fetch_list, armed, count, arm):
    """``_measure`` of ``count`` runs in a fresh scope, with ``armed["on"]`` set for run k when
    ``arm(k)`` (a planted failure goes off)."""
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        out = []
        for k in range(count):
            armed["on"] = arm(k)
            out.append(_measure(lambda: exe.run(main, feed=feed, fetch_list=fetch_list)))
        armed["on"] = False
        return out


def test_a_replay_failing_before_its_steps_counts_nothing_of_its_own(monkeypatch):
    """A scope without the parameters fails while preparing the run: counting array by array,
    not even the feed was counted yet (a replay counted the feed's bytes in the peak)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [256, 64], "float32")
        out = paddle.sum(static.nn.fc(x, 4))
    feed = {"x": np.ones((256, 64), "float32")}

    def scenario():
        exe, ready = static.Executor(), Scope()
        exe.run(startup, scope=ready)
        return [_measure(lambda: exe.run(main, feed=feed, fetch_list=[out], scope=scope))
                for scope in (ready, ready, Scope(), ready)]   # run 3: a scope without parameters

    runs = scenario()
    assert [outcome for _, _, outcome in runs] == ["ok", "ok", "UninitializedError", "ok"]
    _without_ledgers(monkeypatch)
    assert runs == scenario()
    assert runs[2][:2] == (0, 0)


def test_a_replay_failing_after_its_last_step_counts_its_last_stretch(monkeypatch):
    """Fetching a persistable without a value fails after every step ran: the peak includes the
    last step's output (a replay left out the rise of the last stretch's last step)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [4, 16], "float32")
        y = paddle.tile(paddle.tanh(x), [1000, 1])          # the last step: 256 KB
        main.global_block().create_var(name="ghost", persistable=True, shape=[1], dtype="float32")
    feed = {"x": np.ones((4, 16), "float32")}

    def scenario():
        exe = static.Executor()
        exe.run(startup)
        return [_measure(lambda: exe.run(main, feed=feed, fetch_list=[y, "ghost"])) for _ in range(3)], exe

    runs, exe = scenario()
    assert [outcome for _, _, outcome in runs] == ["UninitializedError"] * 3
    assert len(_ledgers(exe)) == 1 and None not in _ledgers(exe).values()   # runs 2 and 3 replayed
    _without_ledgers(monkeypatch)
    assert runs == scenario()[0] and runs == [runs[0]] * 3 and runs[0][0] > 1000 * 16 * 4


def test_a_ctrl_c_held_through_the_updates_of_a_replay_counts_the_whole_run(monkeypatch):
    """A Ctrl-C during the SGD update is held until the run ends (``runtime/interrupt.py``): every
    step ran, the last one (after the updates) included, so its bytes are in the peak."""
    opdef = lookup("sgd")
    real, armed = opdef.kernel, {"on": False}

    def kernel(ins, attrs, ctx):
        if armed["on"]:
            os.kill(os.getpid(), signal.SIGINT)
        return real(ins, attrs, ctx)

    monkeypatch.setattr(opdef, "kernel", kernel)   # before the plan is made: its steps keep it
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [4, 16], "float32")
        loss = paddle.mean(static.nn.fc(x, 4))
        paddle.optimizer.SGD(0.1).minimize(loss)
        y = paddle.tile(x, [1000, 1])            # after the updates: the last step, 256 KB
    feed = {"x": np.ones((4, 16), "float32")}

    def scenario():
        return _armed_runs(startup, main, feed, [loss, y], armed, 4, lambda k: k >= 2)

    runs = scenario()
    assert [outcome for _, _, outcome in runs] == ["ok", "ok", "KeyboardInterrupt", "KeyboardInterrupt"]
    _without_ledgers(monkeypatch)
    assert runs == scenario() and runs[3][0] == runs[0][0] > 1000 * 16 * 4


def test_a_replay_failing_in_a_store_counts_no_rise_after_it(monkeypatch):
    """A step that ended a stretch by storing into the scope fails right after (here: the store
    itself): the stretch's rise was counted at the store, nothing rose since."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [64, 64], "float32")
        g = static.create_global_var([64, 64], 0.0, "float32", persistable=True, name="g")
        h = paddle.tanh(x)
        big = paddle.sum(paddle.tile(h, [8, 1]))      # the stretch's peak: 128 KB
        paddle.assign(h * big, g)                      # a new array stored into g: the stretch ends
        out = paddle.sum(g)
    real, armed = Scope._set_array, {"on": False}

    def set_array(self, name, value):
        if armed["on"] and name == "g":
            raise RuntimeError("store failed")
        return real(self, name, value)

    monkeypatch.setattr(Scope, "_set_array", set_array)
    feed = {"x": np.ones((64, 64), "float32")}

    def scenario():
        return _armed_runs(startup, main, feed, [out], armed, 3, lambda k: k == 2)

    runs = scenario()
    assert [outcome for _, _, outcome in runs][:2] == ["ok", "ok"] and runs[2][2] != "ok"
    _without_ledgers(monkeypatch)
    assert runs == scenario() and runs[2][:2] == (runs[0][0], 0)


def test_a_signature_whose_replays_keep_failing_is_counted_array_by_array(monkeypatch):
    """masked_select's output size changes from run to run: after ``MAX_MISSES`` replays that
    stopped matching, that signature's runs record and replay nothing (counted array by array)."""
    stops = []
    real_replay = ledger.replay
    monkeypatch.setattr(ledger, "replay", lambda *args: stops.append(real_replay(*args)) or stops[-1])
    main, startup, out = _masked_net()
    x = np.random.default_rng(0).standard_normal((64, 16)).astype("float32")
    feeds = [{"x": x}, {"x": np.abs(x)}] * (ledger.MAX_MISSES + 2)   # every second run picks all

    def scenario():
        exe = static.Executor()
        exe.run(startup)
        return _peaks(exe, main, feeds, [out]), exe

    runs, exe = scenario()
    assert len(stops) == ledger.MAX_MISSES and all(s is not None for s in stops)
    assert list(_ledgers(exe).values()) == [None]
    _without_ledgers(monkeypatch)
    assert runs == scenario()[0]


def test_a_plan_keeps_the_ledgers_of_max_ledgers_signatures(monkeypatch):
    """Each new feed signature's first run records a ledger and its second replays it; the
    signature after ``MAX_LEDGERS`` drops them all first.  Counts match array by array."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 8], "float32")
        out = paddle.sum(paddle.tanh(x) * 2.0)
    feeds = [{"x": np.full((b, 8), 0.5, "float32")} for b in range(1, ledger.MAX_LEDGERS + 3) for _ in range(2)]

    def scenario():
        exe = static.Executor()
        exe.run(startup)
        peaks, kept = [], []
        for feed in feeds:
            peaks += _peaks(exe, main, [feed], [out])
            kept.append(len([v for v in _ledgers(exe).values() if v is not None]))
        return peaks, kept

    peaks, kept = scenario()
    assert kept[::2] == list(range(1, ledger.MAX_LEDGERS + 1)) + [1, 2]
    assert kept[1::2] == kept[::2]   # a replay keeps the ledgers as they are
    _without_ledgers(monkeypatch)
    assert scenario()[0] == peaks


def test_bump_counts_a_stretch_exactly():
    tracker = MemoryTracker()
    held = np.zeros(10)
    tracker.acquire(held)                          # 80 bytes
    tracker.bump(100, 40)
    assert (tracker.current, tracker.peak) == (120, 180)
    tracker.bump(0, -40)
    assert (tracker.current, tracker.peak) == (80, 180)


def test_a_kernel_leaving_its_handed_buffer_unused_falls_back_exactly(monkeypatch):
    """With the memory passes relu computes into its input's buffer; a relu that suddenly ignores
    it (a fresh array) no longer matches the ledger: the rest of that run is counted array by
    array, exactly as a run that never had a ledger."""
    opdef = lookup("relu")
    real, armed = opdef.kernel, {"on": False}

    def kernel(ins, attrs, ctx):
        return real(ins, attrs, KernelContext(ctx.wanted) if armed["on"] else ctx)

    monkeypatch.setattr(opdef, "kernel", kernel)   # before the plans are made: their steps keep it
    stops = []
    real_replay = ledger.replay
    monkeypatch.setattr(ledger, "replay", lambda *args: stops.append(real_replay(*args)) or stops[-1])
    main, startup, loss, feed = build("mlp")
    strategy = static.BuildStrategy()
    strategy.enable_inplace = True
    strategy.memory_optimize = True

    def runs(count, arm_at):
        with scope_guard(Scope()):
            exe = static.Executor()
            exe.run(startup)
            compiled = static.CompiledProgram(main, strategy)
            out = []
            for k in range(count):
                armed["on"] = k >= arm_at
                out += _peaks(exe, compiled, [feed], [loss])
            return out, _plan(exe)

    replayed, plan = runs(4, arm_at=2)   # run 3 stops matching, run 4 records anew
    armed["on"] = False
    plain, _ = runs(1, arm_at=1)
    fresh, _ = runs(1, arm_at=0)
    assert replayed[:2] == plain * 2 and replayed[2:] == fresh * 2
    assert all(held == 0 for _, held in replayed)
    # run 2 replayed, run 3 stopped at the first relu (its kernel had run), run 4 recorded anew
    assert stops[0] is None and stops[1][0] == [s.op_type for s in plan.steps].index("relu")
    assert len(stops) == 2 and None not in plan.ledgers.values()
