"""OneCycleLR and CyclicLR against the schedules written out by hand (the reference's formulas)."""
import math

import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import AttrError

lr = paddle.optimizer.lr


def _run(scheduler, n):
    out = [scheduler()]
    for _ in range(n - 1):
        scheduler.step()
        out.append(scheduler())
    return out


def test_one_cycle_two_phases_cosine():
    # total 10, phase_pct 0.3: up over steps 0..2 (width 2), down over 2..9 (width 7)
    got = _run(lr.OneCycleLR(1.0, 10), 10)
    cos = lambda a, b, p: b + (a - b) / 2 * (1 + math.cos(math.pi * p))  # noqa: E731
    want = [cos(0.04, 1.0, s / 2) for s in range(3)] + [cos(1.0, 1e-4, (s - 2) / 7) for s in range(3, 10)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[0] == pytest.approx(0.04) and got[2] == pytest.approx(1.0) and got[9] == pytest.approx(1e-4)


def test_one_cycle_three_phases_linear():
    # total 20, phase 0.25: up 0..4, back to initial by 2*5-2 = 8, then to end by 19
    s = lr.OneCycleLR(2.0, 20, divide_factor=4, end_learning_rate=0.0, phase_pct=0.25,
                      anneal_strategy="linear", three_phase=True)
    got = _run(s, 20)
    want = ([0.5 + 1.5 * k / 4 for k in range(5)] + [2.0 - 1.5 * (k - 4) / 4 for k in range(5, 9)]
            + [0.5 - 0.5 * (k - 8) / 11 for k in range(9, 20)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_one_cycle_errors():
    with pytest.raises(AttrError, match="phase_pct must be < 0.5"):
        lr.OneCycleLR(1.0, 10, phase_pct=0.5, three_phase=True)
    with pytest.raises(AttrError, match="anneal_strategy"):
        lr.OneCycleLR(1.0, 10, anneal_strategy="exp")
    s = lr.OneCycleLR(1.0, 3)
    _run(s, 4)
    with pytest.raises(AttrError, match="stepped 4 times, but total_steps is 3"):
        s.step()


def test_cyclic_modes():
    # up 3 steps, down 2: cycle of 5
    tri = _run(lr.CyclicLR(0.5, 1.0, 3, 2), 11)
    one = [0.5, 0.5 + 0.5 / 3, 0.5 + 1 / 3, 1.0, 0.75]
    np.testing.assert_allclose(tri, one + one + [0.5], rtol=1e-12)
    tri2 = _run(lr.CyclicLR(0.5, 1.0, 3, 2, mode="triangular2"), 10)
    np.testing.assert_allclose(tri2, one + [0.5 + (v - 0.5) / 2 for v in one], rtol=1e-12)
    exp = _run(lr.CyclicLR(0.5, 1.0, 3, 2, mode="exp_range", exp_gamma=0.9), 10)
    np.testing.assert_allclose(exp, [0.5 + (v - 0.5) * 0.9 ** k for k, v in enumerate(one + one)], rtol=1e-12)
    custom = _run(lr.CyclicLR(0.5, 1.0, 3, 2, scale_fn=lambda x: 1 / x, scale_mode="cycle"), 10)
    np.testing.assert_allclose(custom, one + [0.5 + (v - 0.5) / 2 for v in one], rtol=1e-12)
    with pytest.raises(AttrError, match="mode must be one of"):
        lr.CyclicLR(0.5, 1.0, 3, mode="sawtooth")


def test_cyclic_drives_an_optimizer_each_step():
    paddle.disable_static()
    layer = paddle.nn.Linear(2, 1)
    sched = lr.CyclicLR(0.1, 0.3, 2)
    opt = paddle.optimizer.SGD(learning_rate=sched, parameters=layer.parameters())
    seen = []
    for _ in range(4):
        seen.append(opt.get_lr())
        layer(paddle.ones([1, 2])).sum().backward()
        opt.step()
        opt.clear_grad()
        sched.step()
    np.testing.assert_allclose(seen, [0.1, 0.2, 0.3, 0.2], rtol=1e-12)
