"""The executor's ledger (runtime/ledger.py): runs counted from a recorded ledger report the same
current and peak bytes as runs counted array by array, and fall back when the record does not hold."""
import gc

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


def test_data_parallel_places_replay_and_release_everything():
    main, startup, loss, feed = build("mlp", batch=32)
    compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        losses = [exe.run(compiled, feed=feed, fetch_list=[loss])[0]]   # makes place 1's scope
        gc.collect()
        before = memory.memory_allocated()
        losses += [exe.run(compiled, feed=feed, fetch_list=[loss])[0] for _ in range(3)]
        gc.collect()
        assert memory.memory_allocated() == before
        plans = [p for _, entry in exe._plans.values() for p in entry.values() if p.feed_names]
    assert len(plans) == 2 and all(len(p.ledgers) == 1 and None not in p.ledgers.values() for p in plans)
    assert np.all(np.isfinite(losses)) and len({np.asarray(v).tobytes() for v in losses}) == 4   # it trains


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
