"""Static mode: LR schedules, weight decay and gradient clipping inside the optimizers, against
NumPy trajectories of the same network (float64), and RecomputeOptimizer around every optimizer."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.nn import functional as F
from headrace.optimizer import clip, lr, regularizer
from headrace.runtime import Executor, Scope
from tests.optimizer.test_lars_static import lars_ref
from tests.optimizer.test_static_optimizers import X, Y, _numpy_grads

NAMES = ("w1", "b1", "w2", "b2")


def _net(regularizers=None):
    regularizers = regularizers or {}
    x = static.data("x", [-1, 5], "float64")
    y = static.data("y", [-1, 1], "int64")
    attr = lambda n: paddle.ParamAttr(name=n, regularizer=regularizers.get(n))  # noqa: E731
    h = static.nn.fc(x, size=4, activation="tanh", weight_attr=attr("w1"), bias_attr=attr("b1"))
    logits = static.nn.fc(h, size=3, weight_attr=attr("w2"), bias_attr=attr("b2"))
    return paddle.mean(F.cross_entropy(logits, y, reduction="none")), logits


def _train(optimizer, steps=4, regularizers=None, after_step=None):
    loss, _ = _net(regularizers)
    optimizer.minimize(loss)
    scope, exe = Scope(), Executor()
    exe.run(static.default_startup_program(), scope=scope)
    start = {k: np.array(scope.find_var(k).get_tensor()) for k in NAMES}
    losses = []
    for _ in range(steps):
        losses.append(float(exe.run(feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)[0]))
        if after_step:
            after_step()
    return start, losses, {k: np.array(scope.find_var(k).get_tensor()) for k in NAMES}


def _numpy_sgd(p, steps, rates, transform=lambda g, p: g):
    p = {k: v.copy() for k, v in p.items()}
    losses = []
    for t in range(steps):
        loss, g = _numpy_grads(p, X, Y)
        losses.append(loss)
        g = transform(g, p)
        for k in p:
            p[k] = p[k] - rates[t] * g[k]
    return losses, p


def _check(got_losses, got_params, want_losses, want_params):
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-10)
    for k in NAMES:
        np.testing.assert_allclose(got_params[k], want_params[k], rtol=1e-9, atol=1e-12)


def test_step_decay_schedule_is_read_at_every_run():
    sched = lr.StepDecay(0.5, step_size=2, gamma=0.5)
    opt = paddle.optimizer.SGD(learning_rate=sched)
    start, losses, params = _train(opt, steps=5, after_step=sched.step)
    rates = [float(np.float32(v)) for v in (0.5, 0.5, 0.25, 0.25, 0.125)]
    _check(losses, params, *_numpy_sgd(start, 5, rates))
    assert sched.last_epoch == 5 and opt.get_lr() == 0.125


def test_piecewise_schedule_with_momentum():
    sched = lr.PiecewiseDecay([1, 3], [0.3, 0.1, 0.01])
    start, losses, params = _train(paddle.optimizer.Momentum(learning_rate=sched, momentum=0.5), steps=4,
                                   after_step=sched.step)
    p = {k: v.copy() for k, v in start.items()}
    v = {k: np.zeros_like(a) for k, a in p.items()}
    want = []
    for t, rate in enumerate([0.3, 0.1, 0.1, 0.01]):
        loss, g = _numpy_grads(p, X, Y)
        want.append(loss)
        for k in p:
            v[k] = 0.5 * v[k] + g[k]
            p[k] = p[k] - float(np.float32(rate)) * v[k]
    _check(losses, params, want, p)


def test_weight_decay_float_and_per_parameter_regularizer():
    regs = {"w2": regularizer.L1Decay(0.2)}
    start, losses, params = _train(paddle.optimizer.SGD(learning_rate=0.1, weight_decay=0.05),
                                   regularizers=regs)

    def decay(g, p):
        return {k: g[k] + (0.2 * np.sign(p[k]) if k == "w2" else 0.05 * p[k]) for k in g}
    _check(losses, params, *_numpy_sgd(start, 4, [float(np.float32(0.1))] * 4, decay))


def test_fluid_regularization_argument():
    opt = fluid.optimizer.SGDOptimizer(learning_rate=0.1,
                                       regularization=regularizer.L2DecayRegularizer(regularization_coeff=0.3))
    start, losses, params = _train(opt)
    _check(losses, params, *_numpy_sgd(start, 4, [float(np.float32(0.1))] * 4,
                                       lambda g, p: {k: g[k] + 0.3 * p[k] for k in g}))


@pytest.mark.parametrize("make,fn", [
    (lambda: clip.ClipGradByValue(0.05), lambda g: {k: np.clip(v, -0.05, 0.05) for k, v in g.items()}),
    (lambda: clip.ClipGradByNorm(0.1),
     lambda g: {k: v * min(1.0, 0.1 / np.linalg.norm(v.ravel())) for k, v in g.items()}),
    (lambda: clip.ClipGradByGlobalNorm(0.1),
     lambda g: {k: v * 0.1 / max(0.1, np.sqrt(sum((u ** 2).sum() for u in g.values()))) for k, v in g.items()}),
], ids=["value", "norm", "global_norm"])
def test_gradient_clipping_then_decay(make, fn):
    start, losses, params = _train(paddle.optimizer.SGD(learning_rate=0.5, weight_decay=0.01, grad_clip=make()))

    def transform(g, p):
        g = fn(g)
        return {k: g[k] + 0.01 * p[k] for k in g}
    _check(losses, params, *_numpy_sgd(start, 4, [0.5] * 4, transform))


def test_lars_with_regularization_adds_decay_before_the_lars_op():
    opt = fluid.optimizer.LarsMomentumOptimizer(learning_rate=0.1, momentum=0.9, lars_coeff=0.01,
                                                lars_weight_decay=0.001,
                                                regularization=regularizer.L2Decay(0.1))
    start, losses, params = _train(opt)
    p = {k: v.copy() for k, v in start.items()}
    v = {k: np.zeros_like(a) for k, a in p.items()}
    want = []
    for _ in range(4):
        loss, g = _numpy_grads(p, X, Y)
        want.append(loss)
        for k in p:
            p[k], v[k] = lars_ref(p[k], g[k] + 0.1 * p[k], v[k], float(np.float32(0.1)), 0.9, 0.01, 0.001)
    _check(losses, params, want, p)


OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(0.1, weight_decay=0.01),
    "momentum": lambda: paddle.optimizer.Momentum(0.1, 0.9, grad_clip=clip.ClipGradByGlobalNorm(1.0)),
    "adam": lambda: paddle.optimizer.Adam(lr.ExponentialDecay(0.01, 0.9)),
    "lars": lambda: fluid.optimizer.LarsMomentumOptimizer(0.1, 0.9, regularization=regularizer.L1Decay(0.01)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_works_wrapped_by_recompute(name):
    def run(wrap):
        main, startup = static.Program(), static.Program()
        main.random_seed = startup.random_seed = 3
        with static.program_guard(main, startup):
            loss, logits = _net()
            opt = OPTIMIZERS[name]()
            if wrap:
                opt = fluid.optimizer.RecomputeOptimizer(opt)
                opt._set_checkpoints([logits])   # everything before the logits is recomputed
            opt.minimize(loss)
        if wrap:
            assert any(".subprog_" in n for op in main.global_block().ops for n in op.output_arg_names)
        scope, exe = Scope(), Executor()
        exe.run(startup, scope=scope)
        out = [exe.run(main, feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)[0] for _ in range(3)]
        return out, [np.array(scope.find_var(k).get_tensor()) for k in NAMES]
    plain, wrapped = run(False), run(True)
    assert all(np.array_equal(a, b) for a, b in zip(plain[0], wrapped[0]))
    assert all(np.array_equal(a, b) for a, b in zip(plain[1], wrapped[1]))


def test_argument_errors():
    with pytest.raises(TypeError, match="dygraph"):
        paddle.optimizer.SGD(lr.FluidPiecewiseDecay([1], [0.1, 0.2], 0))
    with pytest.raises(TypeError, match="grad_clip"):
        paddle.optimizer.SGD(0.1, grad_clip=1.0)
    with pytest.raises(TypeError, match="weight_decay"):
        paddle.optimizer.SGD(0.1, weight_decay="l2")
