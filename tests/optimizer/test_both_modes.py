"""Learning-rate schedules, regularizers, gradient clipping and LARS, each run in static mode and in
eager mode on the same problem and checked against hand-computed values (float64).

The problem: parameters ``p`` (``w`` [2, 3], ``b`` [3] starting at zero, ``z`` [2] starting at its
target) and ``loss = sum_k 0.5 * ||p_k - t_k||^2``, so the gradient of ``p_k`` is ``p_k - t_k``
exactly; the expected trajectories apply the documented formula to that gradient in NumPy."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context
from headrace.nn.layer import create_parameter
from headrace.optimizer import clip, lr, regularizer
from headrace.optimizer.lars import LarsMomentum
from headrace.runtime import Executor, Scope

TARGET = {"w": np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]), "b": np.array([0.3, -0.2, 0.1]),
          "z": np.array([0.7, -0.4])}
INIT = {"w": np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.5]]), "b": np.zeros(3), "z": TARGET["z"].copy()}
NAMES = ("b", "w", "z")
STEPS = 5
MODES = ("static", "eager")


def _objective(params):
    total = None
    for k in NAMES:
        d = params[k] - paddle.assign(TARGET[k])
        term = paddle.scale(paddle.sum(paddle.square(d)), 0.5)
        total = term if total is None else total + term
    return total


def _params(attrs):
    return {k: create_parameter(list(INIT[k].shape), "float64", attr=paddle.ParamAttr(name=k, **attrs.get(k, {})))
            for k in NAMES}


def run(mode, make_opt, attrs=None, after_step=None, steps=STEPS):
    """The parameters after each of ``steps`` updates, in ``mode``; ``make_opt(parameters)``."""
    attrs = attrs or {}
    trace = []
    if mode == "eager":
        with context.static_mode_guard(False):
            params = _params(attrs)
            for k in NAMES:
                params[k].set_value(INIT[k])
            opt = make_opt(list(params.values()))
            for _ in range(steps):
                _objective(params).backward()
                opt.step()
                opt.clear_grad()
                trace.append({k: params[k].numpy() for k in NAMES})
                if after_step:
                    after_step(opt)
        return trace
    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        params = _params(attrs)
        opt = make_opt(None)
        opt.minimize(_objective(params))
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    for k in NAMES:
        scope.find_var(k).get_tensor().set(INIT[k].copy())
    for _ in range(steps):
        exe.run(main, scope=scope)
        trace.append({k: np.array(scope.find_var(k).get_tensor()) for k in NAMES})
        if after_step:
            after_step(opt)
    return trace


def _lr32(rate, factor=1.0):
    """The learning rate a parameter sees: the float32 lr variable, scaled by the parameter's
    ``ParamAttr(learning_rate=factor)`` in float32."""
    return float(np.float32(np.float32(rate) * np.float32(factor)))


def expected_sgd(rates, transform=lambda g, p: g, rate_factor=None):
    """SGD on the problem: ``p -= rate * transform(g, p)`` (rates rounded to the float32 lr variable)."""
    p = {k: v.copy() for k, v in INIT.items()}
    trace = []
    for rate in rates:
        g = transform({k: p[k] - TARGET[k] for k in NAMES}, p)
        for k in NAMES:
            p[k] = p[k] - _lr32(rate, (rate_factor or {}).get(k, 1.0)) * g[k]
        trace.append({k: v.copy() for k, v in p.items()})
    return trace


def check(got, want, rtol=1e-12, atol=1e-15):
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want)):
        for k in NAMES:
            np.testing.assert_allclose(g[k], w[k], rtol=rtol, atol=atol, err_msg=f"step {step}, {k}")


# --- learning-rate schedules ------------------------------------------------------------------
# (make the scheduler, its rate at steps 0..4 worked out by hand from the documented formula)
SCHEDULES = {
    "piecewise": (lambda: lr.PiecewiseDecay([2, 4], [0.3, 0.2, 0.1]), [0.3, 0.3, 0.2, 0.2, 0.1]),
    "step": (lambda: lr.StepDecay(0.5, step_size=2, gamma=0.5), [0.5, 0.5, 0.25, 0.25, 0.125]),
    "exponential": (lambda: lr.ExponentialDecay(0.4, gamma=0.5), [0.4, 0.2, 0.1, 0.05, 0.025]),
    # 0.4 * (1 + cos(pi * t / 4)) / 2
    "cosine": (lambda: lr.CosineAnnealingDecay(0.4, T_max=4),
               [0.4, 0.2 * (1 + 0.5 ** 0.5), 0.2, 0.2 * (1 - 0.5 ** 0.5), 0.0]),
    # 0.1 -> 0.3 over 2 steps, then 0.5
    "warmup": (lambda: lr.LinearWarmup(0.5, warmup_steps=2, start_lr=0.1, end_lr=0.3), [0.1, 0.2, 0.5, 0.5, 0.5]),
    # then an exponential schedule counted from the end of the warm-up
    "warmup_then_exponential": (lambda: lr.LinearWarmup(lr.ExponentialDecay(0.4, 0.5), warmup_steps=2,
                                                        start_lr=0.0, end_lr=0.2),
                                [0.0, 0.1, 0.4, 0.2, 0.1]),
    # 16 ** -0.5 * min(t ** -0.5, t * 2 ** -1.5), t = 0 -> 0
    "noam": (lambda: lr.NoamDecay(d_model=16, warmup_steps=2),
             [0.0, 0.25 * 2 ** -1.5, 0.25 * 2 ** -0.5, 0.25 * 3 ** -0.5, 0.125]),
    "lambda": (lambda: lr.LambdaDecay(0.5, lambda epoch: 0.9 ** epoch), [0.5, 0.45, 0.405, 0.3645, 0.32805]),
    "multistep": (lambda: lr.MultiStepDecay(0.4, milestones=[1, 3], gamma=0.5), [0.4, 0.2, 0.2, 0.1, 0.1]),
    # (0.4 - 0.1) * (1 - t / 3) + 0.1, held after 3 epochs
    "polynomial": (lambda: lr.PolynomialDecay(0.4, decay_steps=3, end_lr=0.1), [0.4, 0.3, 0.2, 0.1, 0.1]),
    "inverse_time": (lambda: lr.InverseTimeDecay(0.4, gamma=1.0), [0.4, 0.2, 0.4 / 3, 0.1, 0.08]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_sets_the_rate_of_each_update(name, mode):
    make, rates = SCHEDULES[name]
    sched = make()
    seen = []

    def advance(opt):
        seen.append(opt.get_lr())
        sched.step()
    got = run(mode, lambda params: paddle.optimizer.SGD(learning_rate=sched, parameters=params),
              after_step=advance)
    np.testing.assert_allclose(seen, rates, rtol=1e-12, atol=0)
    check(got, expected_sgd(rates))


@pytest.mark.parametrize("mode", MODES)
def test_reduce_on_plateau_follows_the_metric(mode):
    sched = lr.ReduceOnPlateau(0.4, factor=0.5, patience=0)
    metrics = iter([3.0, 3.0, 2.0, 2.5, 2.5])
    got = run(mode, lambda params: paddle.optimizer.SGD(sched, parameters=params),
              after_step=lambda opt: sched.step(next(metrics)))
    check(got, expected_sgd([0.4, 0.4, 0.2, 0.2, 0.1]))


@pytest.mark.parametrize("mode", MODES)
def test_schedule_with_momentum_and_a_parameter_learning_rate(mode):
    sched = lr.StepDecay(0.2, step_size=1, gamma=0.5)
    got = run(mode, lambda params: paddle.optimizer.Momentum(sched, momentum=0.5, parameters=params),
              attrs={"w": {"learning_rate": 3.0}}, after_step=lambda opt: sched.step())
    p = {k: v.copy() for k, v in INIT.items()}
    v = {k: np.zeros_like(a) for k, a in p.items()}
    want = []
    for rate in [0.2, 0.1, 0.05, 0.025, 0.0125]:
        for k in NAMES:
            v[k] = 0.5 * v[k] + (p[k] - TARGET[k])
            p[k] = p[k] - _lr32(rate, 3.0 if k == "w" else 1.0) * v[k]
        want.append({k: a.copy() for k, a in p.items()})
    check(got, want)


def test_fluid_piecewise_decay_is_a_dygraph_schedule():
    import headrace.fluid as fluid
    got = run("eager", lambda params: fluid.optimizer.SGD(fluid.dygraph.PiecewiseDecay([1, 3], [0.4, 0.2, 0.1], 0),
                                                          parameter_list=params))
    check(got, expected_sgd([0.4, 0.2, 0.2, 0.1, 0.1]))
    with pytest.raises(TypeError, match="dygraph"):
        run("static", lambda params: fluid.optimizer.SGD(fluid.dygraph.PiecewiseDecay([1], [0.4, 0.2], 0)))


# --- regularization ---------------------------------------------------------------------------
def _fluid_sgd(**kw):
    import headrace.fluid as fluid
    return lambda params: fluid.optimizer.SGD(0.1, parameter_list=params, **kw)


REGULARIZERS = {
    "l2_number": (lambda params: paddle.optimizer.SGD(0.1, parameters=params, weight_decay=0.2), {},
                  lambda g, p: {k: g[k] + 0.2 * p[k] for k in g}),
    "l2": (lambda params: paddle.optimizer.SGD(0.1, parameters=params, weight_decay=regularizer.L2Decay(0.3)), {},
           lambda g, p: {k: g[k] + 0.3 * p[k] for k in g}),
    "l1": (lambda params: paddle.optimizer.SGD(0.1, parameters=params, weight_decay=regularizer.L1Decay(0.05)), {},
           lambda g, p: {k: g[k] + 0.05 * np.sign(p[k]) for k in g}),
    "fluid_l2": (_fluid_sgd(regularization=regularizer.L2DecayRegularizer(regularization_coeff=0.3)), {},
                 lambda g, p: {k: g[k] + 0.3 * p[k] for k in g}),
    "fluid_l1": (_fluid_sgd(regularization=regularizer.L1DecayRegularizer(regularization_coeff=0.05)), {},
                 lambda g, p: {k: g[k] + 0.05 * np.sign(p[k]) for k in g}),
    # a parameter's own regularizer wins over the optimizer's
    "per_parameter_wins": (
        lambda params: paddle.optimizer.SGD(0.1, parameters=params, weight_decay=regularizer.L2Decay(0.3)),
        {"w": {"regularizer": regularizer.L1Decay(0.05)}},
        lambda g, p: {k: g[k] + (0.05 * np.sign(p[k]) if k == "w" else 0.3 * p[k]) for k in g}),
    "per_parameter_only": (lambda params: paddle.optimizer.SGD(0.1, parameters=params),
                           {"b": {"regularizer": regularizer.L2Decay(0.5)}},
                           lambda g, p: {k: g[k] + (0.5 * p[k] if k == "b" else 0.0) for k in g}),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REGULARIZERS))
def test_regularizer_adds_its_term_to_the_gradient(name, mode):
    make, attrs, transform = REGULARIZERS[name]
    check(run(mode, make, attrs), expected_sgd([0.1] * STEPS, transform))


# --- gradient clipping ------------------------------------------------------------------------
def _global(g, clip_norm, keys=NAMES):
    norm = np.sqrt(sum((g[k] ** 2).sum() for k in keys))
    return {k: g[k] * clip_norm / max(norm, clip_norm) if k in keys else g[k] for k in g}


CLIPS = {
    "value": (lambda: clip.ClipGradByValue(0.3), {}, lambda g: {k: np.clip(v, -0.3, 0.3) for k, v in g.items()}),
    "value_min_max": (lambda: clip.ClipGradByValue(max=0.4, min=-0.1), {},
                      lambda g: {k: np.clip(v, -0.1, 0.4) for k, v in g.items()}),
    "norm": (lambda: clip.ClipGradByNorm(0.5), {},
             lambda g: {k: v * min(1.0, 0.5 / max(np.linalg.norm(v), 1e-300)) for k, v in g.items()}),
    "global_norm": (lambda: clip.ClipGradByGlobalNorm(0.5), {}, lambda g: _global(g, 0.5)),
    # need_clip=False: w is left out of the clip and of the global norm
    "global_norm_need_clip": (lambda: clip.ClipGradByGlobalNorm(0.5), {"w": {"need_clip": False}},
                              lambda g: _global(g, 0.5, keys=("b", "z"))),
    "fluid_name": (lambda: clip.GradientClipByValue(0.3, -0.3), {},
                   lambda g: {k: np.clip(v, -0.3, 0.3) for k, v in g.items()}),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CLIPS))
def test_clipping(name, mode):
    make, attrs, fn = CLIPS[name]
    got = run(mode, lambda params: paddle.optimizer.SGD(0.2, parameters=params, grad_clip=make()), attrs)
    check(got, expected_sgd([0.2] * STEPS, lambda g, p: fn(g)))


@pytest.mark.parametrize("mode", MODES)
def test_clipping_comes_before_weight_decay(mode):
    got = run(mode, lambda params: paddle.optimizer.SGD(0.2, parameters=params, weight_decay=0.1,
                                                        grad_clip=clip.ClipGradByGlobalNorm(0.5)))
    check(got, expected_sgd([0.2] * STEPS, lambda g, p: {k: v + 0.1 * p[k] for k, v in _global(g, 0.5).items()}))


# --- LARS momentum ----------------------------------------------------------------------------
def lars_numpy(rates, mu, coeff, wd, exclude=(), eps=0.0, rescale=1.0, rate_factor=None, decay=None):
    """An independent float64 implementation of the LARS update (the issue's formula)."""
    p = {k: v.copy() for k, v in INIT.items()}
    vel = {k: np.zeros_like(v) for k, v in p.items()}
    trace, local_rates = [], []
    for rate in rates:
        step_rates = {}
        for k in NAMES:
            g = p[k] - TARGET[k]
            if decay is not None:
                g = g + decay * p[k]               # the regularizer acts before the LARS op
            g = rescale * g
            d = 0.0 if any(part in k for part in exclude) else wd
            lr_k = _lr32(rate, (rate_factor or {}).get(k, 1.0))
            pn, gn = np.sqrt((p[k] ** 2).sum()), np.sqrt((g ** 2).sum())
            local = lr_k * coeff * pn / (gn + d * pn + eps) if d > 0 and pn > 0 and gn > 0 else lr_k
            step_rates[k] = local
            vel[k] = mu * vel[k] + local * (g + d * p[k])
            p[k] = p[k] - vel[k]
        local_rates.append(step_rates)
        trace.append({k: v.copy() for k, v in p.items()})
    return trace, local_rates


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exclude", [None, ["w"]], ids=["all_decayed", "w_excluded"])
def test_lars_trajectory(mode, exclude):
    got = run(mode, lambda params: LarsMomentum(0.5, 0.9, lars_coeff=0.2, lars_weight_decay=0.01,
                                                parameter_list=params, exclude_from_weight_decay=exclude),
              attrs={"w": {"learning_rate": 0.5}})
    want, local = lars_numpy([0.5] * STEPS, 0.9, 0.2, 0.01, exclude or (), rate_factor={"w": 0.5})
    check(got, want)
    # the cases the test is about really happen: b starts at zero (||p|| = 0) and z at its target
    # (||g|| = 0), so both take the plain rate on the first step; later steps scale it
    assert local[0]["b"] == 0.5 and local[0]["z"] == 0.5
    assert local[1]["b"] != 0.5 and local[1]["z"] != 0.5
    assert (local[2]["w"] == _lr32(0.5, 0.5)) == bool(exclude)


@pytest.mark.parametrize("mode", MODES)
def test_lars_epsilon_rescale_schedule_and_regularizer(mode):
    sched = lr.ExponentialDecay(0.5, gamma=0.8)
    got = run(mode, lambda params: LarsMomentum(sched, 0.8, lars_coeff=0.1, lars_weight_decay=0.02,
                                                parameter_list=params, epsilon=0.05, rescale_grad=0.5,
                                                regularization=regularizer.L2Decay(0.1)),
              after_step=lambda opt: sched.step())
    want, _ = lars_numpy([0.5 * 0.8 ** t for t in range(STEPS)], 0.8, 0.1, 0.02, eps=0.05, rescale=0.5,
                         decay=0.1)
    check(got, want)


def test_lars_static_and_eager_agree_bit_for_bit():
    make = lambda params: LarsMomentum(0.3, 0.9, lars_coeff=0.05, lars_weight_decay=0.001,  # noqa: E731
                                       parameter_list=params, exclude_from_weight_decay=["b"])
    for s, e in zip(run("static", make), run("eager", make)):
        for k in NAMES:
            assert np.array_equal(s[k], e[k]), k


@pytest.mark.parametrize("mode", MODES)
def test_set_lr_changes_the_rate_of_the_next_updates(mode):
    def change(opt):
        if len(seen) == 1:
            opt.set_lr(0.05)
        seen.append(opt.get_lr())
    seen = []
    got = run(mode, lambda params: paddle.optimizer.SGD(0.2, parameters=params), after_step=change)
    check(got, expected_sgd([0.2, 0.2, 0.05, 0.05, 0.05]))


def test_set_lr_errors():
    opt = paddle.optimizer.SGD(lr.StepDecay(0.1, 2))
    with pytest.raises(RuntimeError, match="StepDecay"):
        opt.set_lr(0.5)
    with pytest.raises(TypeError, match="must be float"):
        paddle.optimizer.SGD(0.1).set_lr("0.5")
