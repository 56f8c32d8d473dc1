"""Learning-rate schedules against values computed by hand from their documented formulas."""
import math

import numpy as np
import pytest

from headrace.optimizer import lr


def trace(scheduler, n):
    values = []
    for _ in range(n):
        values.append(scheduler())
        scheduler.step()
    return values


def test_piecewise():
    assert trace(lr.PiecewiseDecay([2, 4], [1.0, 0.5, 0.1]), 6) == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


def test_step_decay():
    assert trace(lr.StepDecay(0.5, step_size=2, gamma=0.1), 5) == pytest.approx([0.5, 0.5, 0.05, 0.05, 0.005])


def test_exponential():
    assert trace(lr.ExponentialDecay(2.0, gamma=0.5), 4) == [2.0, 1.0, 0.5, 0.25]


def test_cosine_annealing():
    got = trace(lr.CosineAnnealingDecay(1.0, T_max=4, eta_min=0.2), 9)
    want = [0.2 + 0.8 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(9)]
    assert got == pytest.approx(want)
    assert got[4] == pytest.approx(0.2) and got[8] == pytest.approx(1.0)


def test_linear_warmup_then_a_number_or_a_schedule():
    assert trace(lr.LinearWarmup(0.5, warmup_steps=4, start_lr=0.0, end_lr=0.4), 6) == pytest.approx(
        [0.0, 0.1, 0.2, 0.3, 0.5, 0.5])
    inner = lr.StepDecay(1.0, step_size=1, gamma=0.5)
    assert trace(lr.LinearWarmup(inner, warmup_steps=2, start_lr=0.0, end_lr=1.0), 5) == pytest.approx(
        [0.0, 0.5, 1.0, 0.5, 0.25])


def test_noam():
    got = trace(lr.NoamDecay(d_model=16, warmup_steps=4, learning_rate=2.0), 7)
    want = [2.0 * 16 ** -0.5 * min(1.0 if t == 0 else t ** -0.5, t * 4 ** -1.5) for t in range(7)]
    assert got == pytest.approx(want)
    assert got[0] == 0.0 and max(got) == got[4]      # rises until warmup_steps, then decays


def test_lambda():
    assert trace(lr.LambdaDecay(0.5, lambda e: 0.9 ** e), 3) == pytest.approx([0.5, 0.45, 0.405])


def test_multi_step():
    assert trace(lr.MultiStepDecay(1.0, milestones=[2, 3], gamma=0.5), 5) == [1.0, 1.0, 0.5, 0.25, 0.25]


def test_natural_exp_and_inverse_time():
    assert trace(lr.NaturalExpDecay(1.0, gamma=0.5), 3) == pytest.approx([1.0, math.exp(-0.5), math.exp(-1.0)])
    assert trace(lr.InverseTimeDecay(1.0, gamma=0.5), 4) == pytest.approx([1.0, 1 / 1.5, 0.5, 0.4])


def test_polynomial():
    # (1.0 - 0.1) * (1 - t / 4) ** 2 + 0.1, held at 0.1 after 4 epochs
    assert trace(lr.PolynomialDecay(1.0, decay_steps=4, end_lr=0.1, power=2.0), 6) == pytest.approx(
        [1.0, 0.60625, 0.325, 0.15625, 0.1, 0.1])
    # cycle: t = 5 lies in the second period (T = 8): 0.9 * (1 - 5 / 8) + 0.1
    assert trace(lr.PolynomialDecay(1.0, decay_steps=4, end_lr=0.1, cycle=True), 6) == pytest.approx(
        [1.0, 0.775, 0.55, 0.325, 0.1, 0.4375])


def test_multiplicative():
    s = lr.MultiplicativeDecay(1.0, lambda epoch: 0.5 if epoch % 2 else 0.8)
    assert trace(s, 4) == pytest.approx([1.0, 0.5, 0.4, 0.2])
    s.step(6)       # a jump applies the factors of epochs 5 and 6 (the trace left it at 4)
    assert s() == pytest.approx(0.2 * 0.8 * 0.5 * 0.8)
    s.step(1)       # a jump back starts over
    assert s() == pytest.approx(0.5)


def test_reduce_on_plateau():
    s = lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    rates = []
    for loss in [5.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0, 3.0, 3.0]:
        s.step(loss)
        rates.append(s())
    # two epochs without improvement (> patience 1) halve the rate, one epoch of cooldown follows,
    # an improvement resets the count, and the rate stops at min_lr
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2]
    assert s.last_epoch == 12


def test_reduce_on_plateau_modes_and_metrics():
    up = lr.ReduceOnPlateau(1.0, mode="max", patience=0, threshold=0.1, threshold_mode="abs")
    for acc in [0.5, 0.55, 0.7]:     # +0.05 is not an improvement of more than 0.1; +0.2 is
        up.step(np.array([acc]))
    assert up() == pytest.approx(0.1) and up.best == 0.7
    rel = lr.ReduceOnPlateau(1.0, patience=0, threshold=0.1)
    rel.step(10.0)
    rel.step(9.5)                    # not below 10 * (1 - 0.1)
    assert rel() == pytest.approx(0.1)
    with pytest.raises(TypeError, match="shape \\[\\] or \\[1\\]"):
        rel.step(np.ones(2))
    copy = lr.ReduceOnPlateau(1.0, patience=0, threshold=0.1)
    copy.set_state_dict(rel.state_dict())
    assert copy() == rel() and copy.best == rel.best


def test_lenient_arguments_as_the_reference():
    assert trace(lr.InverseTimeDecay(0.5, gamma=0), 2) == [0.5, 0.5]
    assert trace(lr.NaturalExpDecay(0.5, gamma=0), 2) == [0.5, 0.5]
    s = lr.ReduceOnPlateau(1.0, mode="MIN", threshold_mode="ABS", patience=0)
    s.step(1.0)
    s.step(2.0)
    assert s() == pytest.approx(0.1)


def test_step_to_an_epoch_and_state_dict():
    s = lr.ExponentialDecay(1.0, gamma=0.5)
    s.step(3)
    assert s() == 0.125 and s.last_epoch == 3
    other = lr.ExponentialDecay(1.0, gamma=0.5)
    other.set_state_dict(s.state_dict())
    assert other() == 0.125 and other.last_epoch == 3


def test_fluid_piecewise_advances_when_called():
    s = lr.FluidPiecewiseDecay([2, 4, 6, 8], [0.2, 0.4, 0.6, 0.8, 1.0], begin=0)
    assert s.step() == 0.2                                     # peek, no advance
    assert [s() for _ in range(10)] == [0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8, 1.0, 1.0]


@pytest.mark.parametrize("make,match", [
    (lambda: lr.PiecewiseDecay([1, 2], [0.1, 0.2]), "one more entry"),
    (lambda: lr.PiecewiseDecay([2, 1], [0.1, 0.2, 0.3]), "increase"),
    (lambda: lr.StepDecay(0.1, step_size=0), "step_size must be > 0"),
    (lambda: lr.StepDecay(0.1, step_size=2, gamma=1.5), "gamma must be < 1.0"),
    (lambda: lr.StepDecay(0.1, step_size=2.5), "step_size must be an int"),
    (lambda: lr.LinearWarmup(0.1, 3, start_lr=0.5, end_lr=0.1), "end_lr"),
    (lambda: lr.LambdaDecay(0.1, 3), "callable"),
    (lambda: lr.CosineAnnealingDecay("0.1", 3), "learning_rate must be a number"),
    (lambda: lr.MultiStepDecay(0.1, milestones=[3, 1]), "increase"),
    (lambda: lr.MultiStepDecay(0.1, milestones=3), "list or tuple"),
    (lambda: lr.PolynomialDecay(0.1, decay_steps=0), "decay_steps must be > 0"),
    (lambda: lr.ReduceOnPlateau(0.1, mode="up"), "mode must be"),
    (lambda: lr.ReduceOnPlateau(0.1, factor=1.0), "factor must be < 1.0"),
    (lambda: lr.LinearWarmup(lr.ReduceOnPlateau(0.1), 2, 0.0, 0.1), "ReduceOnPlateau"),
])
def test_bad_arguments(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()
