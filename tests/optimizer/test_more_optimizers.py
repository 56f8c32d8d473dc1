"""AdamW, Adagrad, DecayedAdagrad, RMSProp, Adadelta, Adamax, Lamb, NAdam, RAdam: trajectories in
static and eager mode against the reference's formulas written out here in float64 NumPy (the
problem of tests/optimizer/test_both_modes.py: the gradient of p is p - target), static and eager
bit-identical, state_dict round trips, the fluid 1.x names and argument checks."""
import numpy as np
import pytest

import headrace as paddle
from headrace.optimizer import lr
from tests.optimizer.test_both_modes import INIT, MODES, NAMES, STEPS, TARGET, _lr32, check, run

RATE = 0.05


def trajectory(step, state, rates=(RATE,) * STEPS, rate_factor=None):
    """Apply ``step(k, p, g, s, lr, t)`` (returns the new p; updates the state dict s) per update."""
    p = {k: v.copy() for k, v in INIT.items()}
    s = {k: state(k) for k in NAMES}
    out = []
    for t, rate in enumerate(rates, start=1):
        for k in NAMES:
            p[k] = step(k, p[k], p[k] - TARGET[k], s[k], _lr32(rate, (rate_factor or {}).get(k, 1.0)), t)
        out.append({k: v.copy() for k, v in p.items()})
    return out


def zeros(*names):
    return lambda k: {n: np.zeros_like(INIT[k]) for n in names}


def adam_direction(s, g, t, b1, b2, eps):
    s["m"] = b1 * s["m"] + (1 - b1) * g
    s["v"] = b2 * s["v"] + (1 - b2) * g * g
    return (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"]) / np.sqrt(1 - b2 ** t) + eps)


def adamw_ref(coeff, skip=(), ratio=None, b1=0.9, b2=0.999, eps=1e-8):
    def step(k, p, g, s, rate, t):
        rate = rate * (ratio or {}).get(k, 1.0)
        if k not in skip:
            p = p * (1 - rate * coeff)
        return p - rate * adam_direction(s, g, t, b1, b2, eps)
    return step


def adagrad_ref(eps, decay=None):
    def step(k, p, g, s, rate, t):
        s["m"] = s["m"] + g * g if decay is None else decay * s["m"] + (1 - decay) * g * g
        return p - rate * g / (np.sqrt(s["m"]) + eps)
    return step


def rmsprop_ref(rho, eps, momentum, centered):
    def step(k, p, g, s, rate, t):
        s["ms"] = rho * s["ms"] + (1 - rho) * g * g
        s["mg"] = rho * s["mg"] + (1 - rho) * g
        var = s["ms"] - s["mg"] ** 2 if centered else s["ms"]
        s["mom"] = momentum * s["mom"] + rate * g / np.sqrt(var + eps)
        return p - s["mom"]
    return step


def adadelta_ref(rho, eps):
    def step(k, p, g, s, rate, t):
        s["g2"] = rho * s["g2"] + (1 - rho) * g * g
        update = -np.sqrt(s["u2"] + eps) / np.sqrt(s["g2"] + eps) * g
        s["u2"] = rho * s["u2"] + (1 - rho) * update * update
        return p + rate * update
    return step


def adamax_ref(b1, b2, eps):
    def step(k, p, g, s, rate, t):
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"] + eps, np.abs(g))
        return p - rate / (1 - b1 ** t) * s["m"] / s["u"]
    return step


def lamb_ref(wd, excluded=(), b1=0.9, b2=0.999, eps=1e-6, always_adapt=False):
    def step(k, p, g, s, rate, t):
        decay = 0.0 if k in excluded else wd
        r = adam_direction(s, g, t, b1, b2, eps) + decay * p
        pn, rn = np.linalg.norm(p), np.linalg.norm(r)
        trust = pn / rn if (decay > 0 or always_adapt) and pn > 0 and rn > 0 else 1.0
        return p - rate * trust * r
    return step


def nadam_ref(b1=0.9, b2=0.999, eps=1e-8, psi=0.004):
    def step(k, p, g, s, rate, t):
        mu = lambda i: b1 * (1 - 0.5 * 0.96 ** (i * psi))  # noqa: E731
        prod = np.prod([mu(i) for i in range(1, t + 1)])
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = mu(t + 1) * s["m"] / (1 - prod * mu(t + 1)) + (1 - mu(t)) * g / (1 - prod)
        return p - rate * m_hat / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
    return step


def radam_ref(b1=0.9, b2=0.999, eps=1e-8):
    def step(k, p, g, s, rate, t):
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t <= 5:
            return p - rate * m_hat
        r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return p - rate * m_hat * r * np.sqrt(1 - b2 ** t) / (np.sqrt(s["v"]) + eps)
    return step


O = paddle.optimizer
CASES = {
    "adamw": (lambda ps: O.AdamW(RATE, parameters=ps, weight_decay=0.3), zeros("m", "v"), adamw_ref(0.3)),
    "adamw_decay_fun_lr_ratio": (
        lambda ps: O.AdamW(RATE, beta1=0.8, parameters=ps, weight_decay=0.3, apply_decay_param_fun=lambda n: n != "b",
                           lr_ratio=lambda p: 0.5 if p.name == "w" else 1.0),
        zeros("m", "v"), adamw_ref(0.3, skip=("b",), ratio={"w": 0.5}, b1=0.8)),
    "adagrad": (lambda ps: O.Adagrad(RATE, epsilon=1e-3, parameters=ps), zeros("m"), adagrad_ref(1e-3)),
    "adagrad_initial": (lambda ps: O.Adagrad(RATE, parameters=ps, initial_accumulator_value=0.5),
                        lambda k: {"m": np.full_like(INIT[k], 0.5)}, adagrad_ref(1e-6)),
    "rmsprop": (lambda ps: O.RMSProp(RATE, rho=0.9, epsilon=1e-4, momentum=0.5, parameters=ps),
                zeros("ms", "mg", "mom"), rmsprop_ref(0.9, 1e-4, 0.5, False)),
    "rmsprop_centered": (lambda ps: O.RMSProp(RATE, centered=True, momentum=0.2, parameters=ps),
                         zeros("ms", "mg", "mom"), rmsprop_ref(0.95, 1e-6, 0.2, True)),
    "adadelta": (lambda ps: O.Adadelta(RATE, epsilon=1e-3, rho=0.9, parameters=ps), zeros("g2", "u2"),
                 adadelta_ref(0.9, 1e-3)),
    "adamax": (lambda ps: O.Adamax(RATE, beta1=0.8, beta2=0.9, parameters=ps), zeros("m", "u"),
               adamax_ref(0.8, 0.9, 1e-8)),
    "lamb": (lambda ps: O.Lamb(RATE, lamb_weight_decay=0.1, parameters=ps), zeros("m", "v"), lamb_ref(0.1)),
    "lamb_exclude": (lambda ps: O.Lamb(RATE, lamb_weight_decay=0.1, parameters=ps,
                                       exclude_from_weight_decay_fn=lambda p: p.name == "w"),
                     zeros("m", "v"), lamb_ref(0.1, excluded=("w",))),
    "lamb_always_adapt": (lambda ps: O.Lamb(RATE, lamb_weight_decay=0.0, parameters=ps, always_adapt=True),
                          zeros("m", "v"), lamb_ref(0.0, always_adapt=True)),
    "nadam": (lambda ps: O.NAdam(RATE, parameters=ps), zeros("m", "v"), nadam_ref()),
    "nadam_decay": (lambda ps: O.NAdam(RATE, momentum_decay=0.5, beta1=0.7, parameters=ps), zeros("m", "v"),
                    nadam_ref(b1=0.7, psi=0.5)),
    "radam": (lambda ps: O.RAdam(RATE, beta2=0.95, parameters=ps), zeros("m", "v"), radam_ref(b2=0.95)),
    "radam_default": (lambda ps: O.RAdam(RATE, parameters=ps), zeros("m", "v"), radam_ref()),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectory(name, mode):
    make, state, step = CASES[name]
    check(run(mode, make), trajectory(step, state))


@pytest.mark.parametrize("mode", MODES)
def test_radam_takes_both_branches(mode):
    """beta2 = 0.95: rho_t <= 5 for the first 5 steps (plain momentum), > 5 from the 6th (rectified)."""
    rho_inf = 2 / (1 - 0.95) - 1
    rho = [rho_inf - 2 * t * 0.95 ** t / (1 - 0.95 ** t) for t in range(1, 9)]
    assert rho[4] <= 5 < rho[5]
    make, state, step = CASES["radam"]
    check(run(mode, make, steps=8), trajectory(step, state, rates=(RATE,) * 8))


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_and_eager_are_bit_identical(name):
    make = CASES[name][0]
    for s, e in zip(run("static", make), run("eager", make)):
        for k in NAMES:
            assert np.array_equal(s[k], e[k]), k


@pytest.mark.parametrize("mode", MODES)
def test_schedule_parameter_rate_clip_and_decay_apply(mode):
    sched = lr.StepDecay(0.1, step_size=2, gamma=0.5)
    got = run(mode, lambda ps: O.Adagrad(sched, parameters=ps, weight_decay=0.1,
                                         grad_clip=paddle.nn.ClipGradByValue(0.4)),
              attrs={"w": {"learning_rate": 2.0}}, after_step=lambda opt: sched.step())
    base = adagrad_ref(1e-6)
    rates = [0.1, 0.1, 0.05, 0.05, 0.025]

    def step(k, p, g, s, rate, t):
        return base(k, p, np.clip(g, -0.4, 0.4) + 0.1 * p, s, rate, t)
    check(got, trajectory(step, zeros("m"), rates=rates, rate_factor={"w": 2.0}))


@pytest.mark.parametrize("name", ["adamw", "rmsprop_centered", "adamax", "lamb", "nadam", "radam"])
def test_state_dict_resumes_training_exactly(name):
    """Train 2 steps, save, train 2 more; a fresh optimizer loaded with the saved state (before
    its first step) trains the same 2 steps bit for bit."""
    from headrace.core import context, names
    from tests.eager.test_optimizers import _batches, _loss, _net

    make = CASES[name][0]

    def train(net, opt, batches):
        for x, y in batches:
            _loss(net(paddle.to_tensor(x)), paddle.to_tensor(y)).backward()
            opt.step()
            opt.clear_grad()
    with context.static_mode_guard(False):
        batches = _batches()[:4]
        paddle.seed(5)
        net = _net()
        opt = make(net.parameters())
        train(net, opt, batches[:2])
        saved_net = {k: v.numpy() for k, v in net.state_dict().items()}
        saved_opt = {k: v.numpy() for k, v in opt.state_dict().items()}
        train(net, opt, batches[2:])
        want = [p.numpy() for p in net.parameters()]
        with names.guard():
            net2 = _net()
            opt2 = make(net2.parameters())
            net2.set_state_dict(saved_net)
            opt2.set_state_dict(saved_opt)
            train(net2, opt2, batches[2:])
    assert len(saved_opt) >= 2 * len(CASES[name][1]("b"))
    for p, w in zip(net2.parameters(), want):
        assert np.array_equal(p.numpy(), w), p.name


def test_none_hyper_parameters_are_not_set():
    with pytest.raises(ValueError, match="learning_rate is not set"):
        O.Momentum(learning_rate=None)
    with pytest.raises(ValueError, match="momentum is not set"):
        O.Momentum(learning_rate=0.1, momentum=None)
    with pytest.raises(ValueError, match="rho is not set"):
        O.RMSProp(0.1, rho=None)
    with pytest.raises(ValueError, match="learning_rate is not set"):
        O.Adagrad(None)
    with pytest.raises(ValueError, match="beta1"):
        O.AdamW(0.1, beta1=1.0)
    with pytest.raises(TypeError, match="apply_decay_param_fun"):
        O.AdamW(0.1, apply_decay_param_fun="w")
