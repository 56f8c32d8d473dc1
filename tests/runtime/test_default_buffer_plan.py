"""The executor's default buffer plan (``FLAGS_executor_buffer_reuse``, on by default): a plain
``Executor.run`` reuses dying buffers as ``enable_inplace`` + ``memory_optimize`` would, without
touching the Program, with bit-identical results, a lower measured peak that ``memory.estimate``
predicts to the byte, and a plan per fetch list (a value fetched later is never clobbered)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace import memory
from headrace.core.roles import BUFFER_ATTR
from headrace.device import cpu
from headrace.passes.memory_reuse import default_buffer_plan
from headrace.runtime.scope import Scope, scope_guard
from tests.helpers import buffer_reuse
from tests.memory.nets import build
from tests.memory.test_estimate import measured_peak


@pytest.fixture(autouse=True)
def static_mode():
    paddle.enable_static()
    yield


def train(name, reuse, steps=3):
    """Params after ``steps`` steps, the losses and the peak of the last step."""
    main, startup, loss, feed = build(name)
    with buffer_reuse(reuse), scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        losses = []
        for _ in range(steps):
            cpu.reset_max_memory_allocated()
            before = cpu.memory_allocated()
            losses.append(exe.run(main, feed=feed, fetch_list=[loss])[0])
            peak = cpu.max_memory_allocated() - before
        scope = static.global_scope()
        params = {k: np.array(scope.find_var(p.name).get_tensor()) for k, p in enumerate(main.global_block().all_parameters())}
    return params, losses, peak, main


@pytest.mark.parametrize("name", ["mlp", "conv_bn", "transformer"])
def test_default_plan_trains_bit_identically_and_leaves_the_program_alone(name):
    params_off, losses_off, peak_off, _ = train(name, False)
    params, losses, peak, main = train(name, True)
    for a, b in zip(losses, losses_off):
        assert a.tobytes() == b.tobytes()
    assert params.keys() == params_off.keys()
    for k in params:
        assert params[k].tobytes() == params_off[k].tobytes(), k
    assert peak <= peak_off
    # the plan is a side table: the user's program carries none
    assert not any(op.attrs.get(BUFFER_ATTR) for op in main.global_block().ops)
    assert default_buffer_plan(main, frozenset())   # and there was something to reuse


def test_default_plan_lowers_the_mlp_peak_and_estimate_follows_it():
    """Both with the default plan and without it, the estimate equals the measured peak (from
    before the startup program: persistables included)."""
    peaks = {}
    for reuse in (False, True):
        main, startup, loss, feed = build("mlp", batch=512)
        with buffer_reuse(reuse):
            est = memory.estimate(main, {k: list(v.shape) for k, v in feed.items()}, fetch_list=[loss])
            measured = measured_peak(main, startup, feed, [loss])
        assert est.peak_bytes == measured, reuse
        peaks[reuse] = measured
    assert peaks[True] < peaks[False]


def test_flag_switch_rebuilds_the_plan():
    """The flag is part of the plan-cache key: one Executor, one program, the flag toggled."""
    main, startup, loss, feed = build("mlp", batch=512)
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        peaks = []
        for reuse in (False, True, False):
            with buffer_reuse(reuse):
                cpu.reset_max_memory_allocated()
                before = cpu.memory_allocated()
                exe.run(main, feed=feed, fetch_list=[loss])
                peaks.append(cpu.max_memory_allocated() - before)
    assert peaks[0] == peaks[2] > peaks[1]


def forward_chain():
    """x -> exp -> tanh -> sqrt(square(.)): each op may overwrite its dying input."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [-1, 6], "float32")
        a = paddle.exp(x)
        b = paddle.tanh(a)
        c = paddle.sqrt(paddle.square(b))
    return main, a, b, c


def test_a_value_donated_under_one_fetch_list_is_intact_when_fetched_later():
    main, a, b, c = forward_chain()
    feed = {"x": np.random.default_rng(3).standard_normal((4, 6)).astype("float32")}
    kept = feed["x"].copy()
    exe = static.Executor()
    out, = exe.run(main, feed=feed, fetch_list=[c])
    donors = {d for entries in default_buffer_plan(main, frozenset([c.name])).values() for _, _, d in entries}
    assert {a.name, b.name} <= donors          # fetching c only, a and b are overwritten in place
    got_a, got_b, got_c = exe.run(main, feed=feed, fetch_list=[a, b, c])
    again, = exe.run(main, feed=feed, fetch_list=[c])
    with buffer_reuse(False):
        want_a, want_b, want_c = static.Executor().run(main, feed=feed, fetch_list=[a, b, c])
    assert got_a.tobytes() == want_a.tobytes() and got_b.tobytes() == want_b.tobytes()
    assert got_c.tobytes() == out.tobytes() == again.tobytes() == want_c.tobytes()
    assert feed["x"].tobytes() == kept.tobytes()   # a fed array is never a donor


def test_a_program_with_its_own_plan_keeps_it_with_the_flag_off():
    """The passes' plan (IR) is the program's own: the flag only governs programs without one."""
    main, startup, loss, feed = build("mlp")
    strategy = static.BuildStrategy()
    strategy.enable_inplace = True
    strategy.memory_optimize = True
    compiled = static.CompiledProgram(main, build_strategy=strategy)
    peaks = []
    for reuse in (True, False):
        with buffer_reuse(reuse), scope_guard(Scope()):
            exe = static.Executor()
            exe.run(startup)
            cpu.reset_max_memory_allocated()
            before = cpu.memory_allocated()
            exe.run(compiled, feed=feed, fetch_list=[loss])
            peaks.append(cpu.max_memory_allocated() - before)
    assert peaks[0] == peaks[1]


def test_flag_is_validated():
    with pytest.raises(ValueError, match="FLAGS_executor_buffer_reuse"):
        paddle.set_flags({"FLAGS_executor_buffer_reuse": "maybe"})
    assert paddle.get_flags("FLAGS_executor_buffer_reuse") == {"FLAGS_executor_buffer_reuse": True}


def test_small_buffers_of_known_size_are_not_handed_by_default():
    """[8, 16] float32 everywhere: the passes plan buffers, the default plan none (a fresh small
    array is cheaper); the same chain with a -1 batch dim is planned."""
    for batch, planned in ((8, False), (-1, True)):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [batch, 16], "float32")
            out = paddle.sqrt(paddle.square(paddle.tanh(paddle.exp(x))))
        assert bool(default_buffer_plan(main, frozenset([out.name]))) == planned
        feed = {"x": np.random.default_rng(0).standard_normal((8, 16)).astype("float32")}
        est = memory.estimate(main, {"x": [8, 16]}, fetch_list=[out])
        assert est.peak_bytes == measured_peak(main, static.Program(), feed, [out])


def test_a_pass_made_plan_hands_no_small_buffer_of_known_size_either():
    """enable_inplace + memory_optimize record their plan in the IR for every size; the executor
    (and ``memory.estimate``, which uses the same plan) leaves out donors of known size under
    64 KiB, as the default plan does: results bit-identical to a run without reuse, the estimate
    exact; a -1 batch dim keeps the entries."""
    from headrace.passes.memory_reuse import executor_buffer_plan

    strategy = static.BuildStrategy()
    strategy.enable_inplace = strategy.memory_optimize = True
    for batch, planned in ((8, False), (-1, True)):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [batch, 16], "float32")
            out = paddle.sqrt(paddle.square(paddle.tanh(paddle.exp(x))))
        compiled = static.CompiledProgram(main, build_strategy=strategy)
        program = compiled._compile(["x"], [out.name])[0]
        assert any(op.attrs.get(BUFFER_ATTR) for op in program.global_block().ops)   # the IR has the plan
        assert bool(executor_buffer_plan(program, frozenset([out.name]))) == planned
        feed = {"x": np.random.default_rng(1).standard_normal((8, 16)).astype("float32")}
        got, = static.Executor().run(compiled, feed=feed, fetch_list=[out])
        with buffer_reuse(False):
            want, = static.Executor().run(main, feed=feed, fetch_list=[out])
        assert got.tobytes() == want.tobytes()
        est = memory.estimate(main, {"x": [8, 16]}, build_strategy=strategy, fetch_list=[out])
        assert est.peak_bytes == measured_peak(compiled, static.Program(), feed, [out])
