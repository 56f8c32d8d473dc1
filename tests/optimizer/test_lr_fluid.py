"""fluid 1.x learning-rate decays: the fluid.dygraph schedules (step timing, epoch decays,
ReduceLROnPlateau) and the fluid.layers static decay functions (a learning-rate Variable that
advances every run, survives clone, drops out of a for_test clone, advances in data parallel),
each against rates worked out by hand from the 1.x formulas."""
import math

import numpy as np
import pytest

import headrace.fluid as fluid
import headrace.static as static
from headrace.core import context
from tests.optimizer.test_both_modes import check, expected_sgd, run

D = fluid.dygraph
L = fluid.layers

# (schedule, the rates of updates 0..4); step decays advance once per update
DYGRAPH = {
    "exponential": (lambda: D.ExponentialDecay(0.4, decay_steps=2, decay_rate=0.5),
                    [0.4 * 0.5 ** (t / 2) for t in range(5)]),
    "exponential_staircase": (lambda: D.ExponentialDecay(0.4, 2, 0.5, staircase=True), [0.4, 0.4, 0.2, 0.2, 0.1]),
    "natural_exp": (lambda: D.NaturalExpDecay(0.4, 2, 0.5, begin=1),
                    [0.4 * math.exp(-0.5 * t / 2) for t in range(1, 6)]),
    "inverse_time": (lambda: D.InverseTimeDecay(0.4, 1, 1.0, step=2), [0.4 / (1 + t) for t in range(0, 10, 2)]),
    "polynomial": (lambda: D.PolynomialDecay(0.4, 3, end_learning_rate=0.1), [0.4, 0.3, 0.2, 0.1, 0.1]),
    # cycle: the period grows to the next multiple of 2 (step 0 counts as one period)
    "polynomial_cycle": (lambda: D.PolynomialDecay(0.4, 2, 0.0, power=2.0, cycle=True),
                         [0.4, 0.4 * 0.25, 0.0, 0.4 * (1 - 3 / 4) ** 2, 0.0]),
    "cosine": (lambda: D.CosineDecay(0.4, step_each_epoch=2, epochs=4),
               [0.4, 0.4, 0.2 * (1 + math.cos(math.pi / 4)), 0.2 * (1 + math.cos(math.pi / 4)), 0.2]),
    # begins at step 1
    "noam": (lambda: D.NoamDecay(16, warmup_steps=2, learning_rate=2.0),
             [2 * 0.25 * min(t ** -0.5, 2 ** -1.5 * t) for t in range(1, 6)]),
    # begins at 1: 0.1 + 0.1 * t for t < 3, then 0.5
    "warmup": (lambda: D.LinearLrWarmup(0.5, warmup_steps=3, start_lr=0.1, end_lr=0.4), [0.2, 0.3, 0.5, 0.5, 0.5]),
    # the wrapped schedule is called at every update, also during the warm-up
    "warmup_wraps": (lambda: D.LinearLrWarmup(D.PiecewiseDecay([3], [0.5, 0.25], 0), 2, 0.0, 0.2, begin=0),
                     [0.0, 0.1, 0.5, 0.25, 0.25]),
    "piecewise": (lambda: D.PiecewiseDecay([1, 3], [0.4, 0.2, 0.1], 0), [0.4, 0.2, 0.2, 0.1, 0.1]),
}


@pytest.mark.parametrize("name", sorted(DYGRAPH))
def test_dygraph_step_decays(name):
    make, rates = DYGRAPH[name]
    seen = []
    got = run("eager", lambda ps: fluid.optimizer.SGD(make(), parameter_list=ps),
              after_step=lambda opt: seen.append(opt.current_step_lr()))
    np.testing.assert_allclose(seen, rates, rtol=1e-12, atol=1e-15)
    check(got, expected_sgd(rates))


@pytest.mark.parametrize("make,rates", [
    (lambda: D.StepDecay(0.5, step_size=2, decay_rate=0.5), [0.5, 0.5, 0.25, 0.25, 0.125]),
    (lambda: D.MultiStepDecay(0.5, milestones=[1, 3], decay_rate=0.1), [0.5, 0.05, 0.05, 0.005, 0.005]),
    (lambda: D.LambdaDecay(0.5, lr_lambda=lambda e: 0.9 ** e), [0.5 * 0.9 ** e for e in range(5)]),
], ids=["step", "multistep", "lambda"])
def test_dygraph_epoch_decays_advance_on_epoch(make, rates):
    sched = make()
    assert sched() == sched() == rates[0]             # calling does not advance
    got = run("eager", lambda ps: fluid.optimizer.SGD(sched, parameter_list=ps), after_step=lambda opt: sched.epoch())
    check(got, expected_sgd(rates))
    sched.epoch(0)
    assert sched() == rates[0]


def test_reduce_lr_on_plateau_1x():
    sched = D.ReduceLROnPlateau(0.4, decay_rate=0.5, patience=1, cooldown=1, min_lr=0.06)
    losses = iter([3.0, 3.0, 3.0, 3.0, 3.0])
    got = run("eager", lambda ps: fluid.optimizer.SGD(sched, parameter_list=ps),
              after_step=lambda opt: sched.step(next(losses)))
    # epoch 1 best, 2 bad(1), 3 bad(2 > 1) -> 0.2 and cooldown 1, 4 cooldown, 5 bad(1)
    check(got, expected_sgd([0.4, 0.4, 0.4, 0.2, 0.2]))
    for _ in range(4):
        sched.step(3.0)
    assert sched() == 0.06                            # 0.1, then max(0.05, min_lr)
    with pytest.raises(ValueError, match="decay_rate"):
        D.ReduceLROnPlateau(0.1, decay_rate=1.0)


def test_dygraph_schedule_state_round_trip():
    sched = D.LinearLrWarmup(D.ExponentialDecay(0.4, 1, 0.5), 2, 0.0, 0.2)
    for _ in range(3):
        sched()
    other = D.LinearLrWarmup(D.ExponentialDecay(0.4, 1, 0.5), 2, 0.0, 0.2)
    other.set_state_dict(sched.state_dict())
    assert [other() for _ in range(3)] == [sched() for _ in range(3)]


# --- fluid.layers static decays ----------------------------------------------------------------------------
STATIC = {
    "exponential_decay": (lambda: L.exponential_decay(0.4, 2, 0.5, staircase=True), [0.4, 0.4, 0.2, 0.2, 0.1]),
    "natural_exp_decay": (lambda: L.natural_exp_decay(0.4, 2, 0.5), [0.4 * math.exp(-0.25 * t) for t in range(5)]),
    "inverse_time_decay": (lambda: L.inverse_time_decay(0.4, 1, 1.0), [0.4 / (1 + t) for t in range(5)]),
    "polynomial_decay": (lambda: L.polynomial_decay(0.4, 3, end_learning_rate=0.1), [0.4, 0.3, 0.2, 0.1, 0.1]),
    "polynomial_decay_cycle": (lambda: L.polynomial_decay(0.4, 2, 0.0, power=2.0, cycle=True),
                               [0.4, 0.1, 0.0, 0.4 * (1 - 3 / 4) ** 2, 0.0]),
    "piecewise_decay": (lambda: L.piecewise_decay([1, 3], [0.4, 0.2, 0.1]), [0.4, 0.2, 0.2, 0.1, 0.1]),
    "cosine_decay": (lambda: L.cosine_decay(0.4, 2, 4),
                     [0.4, 0.4, 0.2 * (1 + math.cos(math.pi / 4)), 0.2 * (1 + math.cos(math.pi / 4)), 0.2]),
    "noam_decay": (lambda: L.noam_decay(16, 2, learning_rate=2.0),
                   [2 * 0.25 * min(t ** -0.5, 2 ** -1.5 * t) for t in range(1, 6)]),
    "linear_lr_warmup": (lambda: L.linear_lr_warmup(0.5, 3, 0.2, 0.5), [0.2, 0.3, 0.4, 0.5, 0.5]),
    "linear_lr_warmup_of_a_schedule": (lambda: L.linear_lr_warmup(L.exponential_decay(0.4, 1, 0.5), 2, 0.0, 0.2),
                                       [0.0, 0.1, 0.1, 0.05, 0.025]),
}


@pytest.mark.parametrize("name", sorted(STATIC))
def test_static_decay_advances_every_run(name):
    make, rates = STATIC[name]
    got = run("static", lambda ps: fluid.optimizer.SGD(make()))
    check(got, expected_sgd(rates), rtol=1e-6)       # the rate is a float32 variable


def _program_with(make):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        loss = fluid.layers.reduce_mean(fluid.layers.fc(x, size=1))
        lr = make()
        fluid.optimizer.SGD(lr).minimize(loss)
    return main, startup, loss, lr


def test_static_decay_survives_clone_and_for_test_drops_it():
    main, startup, loss, lr = _program_with(lambda: L.piecewise_decay([2], [0.3, 0.1]))
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"x": np.ones([3, 2], "float32")}
    clone = main.clone()
    test = main.clone(for_test=True)
    assert not any(op.type == "lr_schedule" for op in test.global_block().ops)
    seen = []
    for program in (main, clone, main):
        seen.append(float(exe.run(program, feed=feed, fetch_list=[lr], scope=scope)[0][0]))
        exe.run(test, feed=feed, fetch_list=[loss], scope=scope)      # evaluation does not advance it
    np.testing.assert_allclose(seen, [0.3, 0.3, 0.1], rtol=1e-7)


def test_static_decay_advances_in_data_parallel():
    main, startup, loss, lr = _program_with(lambda: L.exponential_decay(0.4, 1, 0.5))
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    feed = {"x": np.ones([4, 2], "float32")}
    seen = [exe.run(compiled, feed=feed, fetch_list=[lr], scope=scope)[0].ravel()[0] for _ in range(3)]
    np.testing.assert_allclose(seen, [0.4, 0.2, 0.1], rtol=1e-7)


def test_dygraph_mode_returns_the_dygraph_schedules():
    with context.static_mode_guard(False):
        assert isinstance(L.exponential_decay(0.1, 2, 0.5), D.ExponentialDecay)
        assert isinstance(L.noam_decay(16, 2), D.NoamDecay)
        assert isinstance(L.piecewise_decay([1], [0.1, 0.2]), D.PiecewiseDecay)
        warm = L.linear_lr_warmup(0.5, 2, 0.0, 0.2)
        assert isinstance(warm, D.LinearLrWarmup) and warm.step_num == 1


def test_static_decay_errors():
    with pytest.raises(ValueError, match="len\\(values\\)"):
        L.piecewise_decay([1, 2], [0.1])
    with pytest.raises(TypeError, match="learning_rate must be a number"):
        L.exponential_decay("0.1", 2, 0.5)
