"""LARS momentum in static mode: the ``lars_momentum`` op against the reference's measured golden
vectors (float32) and an independent float64 NumPy implementation of the formula, and a training
trajectory of several steps with a zero-initialised bias (zero-norm fallback on the first step)
and an excluded parameter, against NumPy."""
import numpy as np
import pytest

import headrace.fluid as fluid
import headrace.static as static
from headrace.incubate.optimizer import LarsMomentumOptimizer as IncubateLars
from headrace.runtime import Executor, Scope
from tests.ops.test_optim import _run_steps
from tests.optimizer.test_static_optimizers import X, Y, _net, _numpy_grads


def lars_ref(p, g, v, lr, mu, coeff, wd, eps=0.0, rescale=1.0):
    """The formula, written out independently, in float64."""
    g = rescale * g
    pn, gn = np.linalg.norm(p.ravel()), np.linalg.norm(g.ravel())
    local = lr * coeff * pn / (gn + wd * pn + eps) if wd > 0 and pn > 0 and gn > 0 else lr
    v = mu * v + local * (g + wd * p)
    return p - v, v


# measured on the reference system (shared/reference §4.3): p, g, v fixed, 2x2 float32
P0 = np.array([[1, 2], [3, 4]], np.float32)
G0 = np.array([[0.5, -0.5], [0.25, 1.0]], np.float32)
V0 = np.array([[0.1, 0], [-0.1, 0.2]], np.float32)
GOLDEN = [
    (dict(lr=0.1, mu=0.9, coeff=0.001, wd=0.0005, eps=0.0, rescale=1.0), G0,
     [0.9097811580, 2.0002181530, 3.0898900032, 3.8195619583],
     [0.0902188271, -0.000218172892, -0.0898900330, 0.1804380864]),
    (dict(lr=0.1, mu=0.9, coeff=0.001, wd=0.0005, eps=1e-3, rescale=0.5), G0,
     [0.9097818136, 2.0002169609, 3.0898897648, 3.8195626736],
     [0.0902182162, -0.000216915156, -0.0898897946, 0.1804373115]),
    (dict(lr=0.1, mu=0.9, coeff=0.001, wd=0.0, eps=0.0, rescale=1.0), G0,
     [0.86, 2.05, 3.065, 3.72], [0.14, -0.05, -0.065, 0.28]),
    (dict(lr=1.0, mu=0.0, coeff=0.5, wd=0.1, eps=0.0, rescale=1.0), G0,
     [0.0859724879, 2.4570138454, 2.1621415615, 1.8672692776],
     [0.9140275121, -0.4570137560, 0.8378584981, 2.1327307224]),
    (dict(lr=0.1, mu=0.9, coeff=0.001, wd=0.0005, eps=0.0, rescale=1.0), np.zeros_like(G0),
     [0.9099500179, 1.9998999834, 3.0898499489, 3.8197999001],
     [0.0900499970, 0.0001000000047, -0.0898499936, 0.1801999956]),
]


def _attrs(c):
    return {"mu": c["mu"], "lars_coeff": c["coeff"], "lars_weight_decay": c["wd"], "epsilon": c["eps"],
            "rescale_grad": c["rescale"]}


@pytest.mark.parametrize("case", range(len(GOLDEN)))
def test_op_matches_the_reference_golden_vectors(case):
    c, grad, want_p, want_v = GOLDEN[case]
    [state] = _run_steps("lars_momentum", {"Param": P0.copy(), "Velocity": V0.copy()}, _attrs(c),
                         [grad], c["lr"])
    np.testing.assert_allclose(state["Param"].ravel(), want_p, rtol=0, atol=2e-7)
    np.testing.assert_allclose(state["Velocity"].ravel(), want_v, rtol=0, atol=2e-7)


@pytest.mark.parametrize("wd", [0.0, 0.0005, 0.3])
def test_op_follows_the_formula_over_several_steps_in_float64(wd):
    rng = np.random.default_rng(int(wd * 1e4))
    p, v = rng.normal(size=(7, 5)), np.zeros((7, 5))
    grads = [rng.normal(size=(7, 5)) for _ in range(4)] + [np.zeros((7, 5))]
    c = dict(lr=0.05, mu=0.9, coeff=0.01, wd=wd, eps=1e-4, rescale=0.7)
    history = _run_steps("lars_momentum", {"Param": p.copy(), "Velocity": v.copy()}, _attrs(c), grads, c["lr"])
    lr32 = float(np.float32(c["lr"]))
    for grad, got in zip(grads, history):
        p, v = lars_ref(p, grad, v, lr32, c["mu"], c["coeff"], wd, c["eps"], c["rescale"])
        np.testing.assert_allclose(got["Param"], p, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got["Velocity"], v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("exclude", [None, ["b1"]])
def test_training_trajectory_matches_numpy(exclude):
    lr, mu, coeff, wd = 0.1, 0.9, 0.01, 0.01
    loss = _net(w1_lr=0.5)
    opt = fluid.optimizer.LarsMomentumOptimizer(learning_rate=lr, momentum=mu, lars_coeff=coeff,
                                                lars_weight_decay=wd, exclude_from_weight_decay=exclude)
    all_ops, _ = opt.minimize(loss)
    # minimize returns every op it appended: w1's learning-rate scale op before its update
    assert [op.type for op in all_ops] == ["lars_momentum"] * 2 + ["scale"] + ["lars_momentum"] * 2
    ops = [op for op in all_ops if op.type == "lars_momentum"]
    assert {op.input("Param")[0]: op.attr("lars_weight_decay") for op in ops} == {
        "b1": 0.0 if exclude else wd, "b2": wd, "w1": wd, "w2": wd}
    scope, exe = Scope(), Executor()
    exe.run(static.default_startup_program(), scope=scope)
    p = {k: np.array(scope.find_var(k).get_tensor()) for k in ("w1", "b1", "w2", "b2")}
    assert not p["b1"].any()                  # zero-initialised bias: ||p|| = 0 -> plain momentum
    v = {k: np.zeros_like(a) for k, a in p.items()}
    lr32 = float(np.float32(lr))
    for _ in range(5):
        got = float(exe.run(feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)[0])
        want, g = _numpy_grads(p, X, Y)
        np.testing.assert_allclose(got, want, rtol=1e-10)
        for k in p:
            rate = lr32 * (0.5 if k == "w1" else 1.0)
            decay = 0.0 if exclude and k in exclude else wd
            p[k], v[k] = lars_ref(p[k], g[k], v[k], rate, mu, coeff, decay)
    for k in p:
        np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), p[k], rtol=1e-9, atol=1e-12)


def test_incubate_name_and_argument_errors():
    assert IncubateLars is fluid.optimizer.LarsMomentumOptimizer
    with pytest.raises(ValueError, match="momentum is not set"):
        fluid.optimizer.LarsMomentumOptimizer(0.1, None)
    with pytest.raises(TypeError, match="exclude_from_weight_decay"):
        fluid.optimizer.LarsMomentumOptimizer(0.1, 0.9, exclude_from_weight_decay="b_0")
    with pytest.raises(ValueError, match="lars_coeff"):
        fluid.optimizer.LarsMomentumOptimizer(0.1, 0.9, lars_coeff=-1.0)
