"""Static-mode optimizers: trajectories against an independent NumPy implementation (float64),
the minimize/backward/apply_gradients/apply_optimize pipeline, learning rates (float, Variable,
per-parameter), accumulators, both API spellings, and argument errors."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.roles import OpRole
from headrace.nn import functional as F
from headrace.runtime import Executor, Scope

rng = np.random.default_rng(3)
X = rng.normal(size=(8, 5))
Y = rng.integers(0, 3, (8, 1)).astype(np.int64)


def _net(w1_lr=1.0):
    x = static.data("x", [-1, 5], "float64")
    y = static.data("y", [-1, 1], "int64")
    h = static.nn.fc(x, size=4, activation="tanh",
                     weight_attr=paddle.ParamAttr(name="w1", learning_rate=w1_lr),
                     bias_attr=paddle.ParamAttr(name="b1"))
    logits = static.nn.fc(h, size=3, weight_attr=paddle.ParamAttr(name="w2"),
                          bias_attr=paddle.ParamAttr(name="b2"))
    return paddle.mean(F.cross_entropy(logits, y, reduction="none"))


def _numpy_grads(p, x, y):
    """Hand-written backward of the same network (mean softmax cross-entropy)."""
    z1 = x @ p["w1"] + p["b1"]
    h = np.tanh(z1)
    logits = h @ p["w2"] + p["b2"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    n = len(x)
    loss = -np.log(prob[np.arange(n), y[:, 0]]).mean()
    d = prob.copy()
    d[np.arange(n), y[:, 0]] -= 1
    d /= n
    g = {"w2": h.T @ d, "b2": d.sum(0)}
    dz1 = (d @ p["w2"].T) * (1 - h * h)
    g.update({"w1": x.T @ dz1, "b1": dz1.sum(0)})
    return loss, g


def _numpy_train(kind, p, steps, lr, lr_factor, **kw):
    p = {k: v.copy() for k, v in p.items()}
    state = {k: {"v": np.zeros_like(v), "m1": np.zeros_like(v), "m2": np.zeros_like(v),
                 "b1p": kw.get("beta1", 0.9), "b2p": kw.get("beta2", 0.999)} for k, v in p.items()}
    losses = []
    for _ in range(steps):
        loss, g = _numpy_grads(p, X, Y)
        losses.append(loss)
        for k in p:
            rate = lr * lr_factor.get(k, 1.0)
            s = state[k]
            if kind == "sgd":
                p[k] = p[k] - rate * g[k]
            elif kind == "momentum":
                mu = kw.get("momentum", 0.9)
                s["v"] = mu * s["v"] + g[k]
                step = (g[k] + mu * s["v"]) if kw.get("use_nesterov") else s["v"]
                p[k] = p[k] - rate * step
            else:
                b1, b2, eps = kw.get("beta1", 0.9), kw.get("beta2", 0.999), kw.get("epsilon", 1e-8)
                s["m1"] = b1 * s["m1"] + (1 - b1) * g[k]
                s["m2"] = b2 * s["m2"] + (1 - b2) * g[k] ** 2
                lr_t = rate * np.sqrt(1 - s["b2p"]) / (1 - s["b1p"])
                p[k] = p[k] - lr_t * s["m1"] / (np.sqrt(s["m2"]) + eps * np.sqrt(1 - s["b2p"]))
                s["b1p"] *= b1
                s["b2p"] *= b2
    return losses, p


OPTIMIZERS = [
    ("sgd", lambda lr: paddle.optimizer.SGD(learning_rate=lr), {}),
    ("momentum", lambda lr: paddle.optimizer.Momentum(learning_rate=lr, momentum=0.8), {"momentum": 0.8}),
    ("momentum", lambda lr: paddle.optimizer.Momentum(learning_rate=lr, momentum=0.7, use_nesterov=True),
     {"momentum": 0.7, "use_nesterov": True}),
    ("adam", lambda lr: paddle.optimizer.Adam(learning_rate=lr), {}),
    ("adam", lambda lr: paddle.optimizer.Adam(learning_rate=lr, beta1=0.5, beta2=0.9, epsilon=1e-3),
     {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-3}),
]


@pytest.mark.parametrize("kind,make,kw", OPTIMIZERS, ids=[f"{k}-{kw}" for k, _, kw in OPTIMIZERS])
@pytest.mark.parametrize("w1_lr", [1.0, 0.25])
def test_trajectory_matches_numpy(kind, make, kw, w1_lr):
    lr = 0.1
    loss = _net(w1_lr)
    make(lr).minimize(loss)
    scope = Scope()
    exe = Executor()
    exe.run(static.default_startup_program(), scope=scope)
    start = {k: np.array(scope.find_var(k).get_tensor()) for k in ("w1", "b1", "w2", "b2")}
    got = [float(exe.run(feed={"x": X, "y": Y}, fetch_list=[loss], scope=scope)[0]) for _ in range(4)]
    lr32 = float(np.float32(lr))  # the learning-rate variable is float32, as in the reference
    want, params = _numpy_train(kind, start, 4, lr32, {"w1": w1_lr}, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    for k, v in params.items():
        np.testing.assert_allclose(np.array(scope.find_var(k).get_tensor()), v, rtol=1e-9, atol=1e-12)


def test_minimize_returns_ops_and_pairs_with_roles():
    loss = _net()
    ops, pairs = paddle.optimizer.Momentum(learning_rate=0.1).minimize(loss)
    assert [op.type for op in ops] == ["momentum"] * 4
    assert [p.name for p, _ in pairs] == ["w1", "b1", "w2", "b2"]
    assert [op.input("Param")[0] for op in ops] == ["b1", "b2", "w1", "w2"]  # sorted by name
    for op in ops:
        param = op.input("Param")[0]
        assert op.attr("op_role") == int(OpRole.Optimize)
        assert op.attr("op_role_var") == [param, param + "@GRAD"]
        assert op.output("ParamOut") == [param]
        assert op.input("Velocity")[0] == f"{param}_velocity_0"
    block = static.default_main_program().global_block()
    assert block.var("learning_rate_0").persistable and block.var("learning_rate_0").shape == (1,)
    startup_outs = [op.output("Out")[0] for op in static.default_startup_program().global_block().ops]
    assert "learning_rate_0" in startup_outs and "w1_velocity_0" in startup_outs


def test_adam_accumulators_and_beta_powers_start_at_beta():
    loss = _net()
    paddle.optimizer.Adam(learning_rate=0.1, beta1=0.8, beta2=0.95).minimize(loss)
    scope = Scope()
    Executor().run(static.default_startup_program(), scope=scope)
    np.testing.assert_array_equal(scope.find_var("w1_beta1_pow_acc_0").get_tensor(), [0.8])
    np.testing.assert_array_equal(scope.find_var("w1_beta2_pow_acc_0").get_tensor(), [0.95])
    np.testing.assert_array_equal(scope.find_var("w1_moment1_0").get_tensor(), np.zeros((5, 4)))


def test_learning_rate_variable_is_read_at_run_time():
    loss = _net()
    block = static.default_main_program().global_block()
    lr = fluid.layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True,
                                        name="my_lr")
    paddle.optimizer.SGD(learning_rate=lr).minimize(loss)
    assert all(op.input("LearningRate") == ["my_lr"] for op in block.ops if op.type == "sgd")
    scope = Scope()
    exe = Executor()
    exe.run(static.default_startup_program(), scope=scope)
    np.testing.assert_array_equal(scope.find_var("my_lr").get_tensor(), [0.0])
    before = np.array(scope.find_var("w1").get_tensor())
    exe.run(feed={"x": X, "y": Y}, scope=scope)
    np.testing.assert_array_equal(scope.find_var("w1").get_tensor(), before)  # lr 0: no change
    scope.var("my_lr").get_tensor().set(np.array([0.5], np.float32))
    exe.run(feed={"x": X, "y": Y}, scope=scope)
    assert not np.array_equal(scope.find_var("w1").get_tensor(), before)


def test_backward_then_apply_gradients_equals_minimize():
    def trained(split):
        main, startup = static.Program(), static.Program()
        startup.random_seed = 5
        with static.program_guard(main, startup):
            loss = _net()
            opt = fluid.optimizer.SGD(learning_rate=0.1)
            if split == "minimize":
                opt.minimize(loss)
            elif split == "apply_gradients":
                pg = opt.backward(loss)
                with fluid.framework.program_guard(loss.block.program, None):
                    opt.apply_gradients(pg)
            else:
                pg = opt.backward(loss, startup_program=None, parameter_list=None, no_grad_set=None)
                opt.apply_optimize(loss, startup_program=None, params_grads=pg)
        scope = Scope()
        exe = Executor()
        exe.run(startup, scope=scope)
        for _ in range(2):
            exe.run(main, feed={"x": X, "y": Y}, scope=scope)
        return [op.type for op in main.global_block().ops], np.array(scope.find_var("w1").get_tensor())

    types, w = trained("minimize")
    for split in ("apply_gradients", "apply_optimize"):
        t, w2 = trained(split)
        assert t == types
        np.testing.assert_array_equal(w, w2)


def test_parameters_restrict_what_is_updated():
    loss = _net()
    block = static.default_main_program().global_block()
    ops, pairs = paddle.optimizer.SGD(0.1, parameters=[block.var("w2")]).minimize(loss)
    assert [p.name for p, _ in pairs] == ["w2"] and len(ops) == 1
    ops2, pairs2 = fluid.optimizer.SGD(0.1, parameter_list=["b2"]).minimize(loss)
    assert [p.name for p, _ in pairs2] == ["b2"]


def test_fluid_names_map_their_arguments():
    opt = fluid.optimizer.MomentumOptimizer(0.1, 0.5, use_nesterov=True)
    assert opt._momentum == 0.5 and opt._use_nesterov
    opt = fluid.optimizer.AdamOptimizer(learning_rate=0.2, beta1=0.7, epsilon=1e-6)
    assert (opt._learning_rate, opt._beta1, opt._epsilon) == (0.2, 0.7, 1e-6)
    assert fluid.optimizer.Adam is fluid.optimizer.AdamOptimizer
    assert opt.get_lr() == 0.2


@pytest.mark.parametrize("make,error", [
    (lambda: paddle.optimizer.SGD(learning_rate="0.1"), TypeError),
    (lambda: paddle.optimizer.SGD(learning_rate=-1.0), ValueError),
    (lambda: paddle.optimizer.Adam(beta1=1.0), ValueError),
    (lambda: paddle.optimizer.Adam(epsilon=-1e-8), ValueError),
    (lambda: paddle.optimizer.Momentum(momentum="fast"), TypeError),
    (lambda: paddle.optimizer.SGD(0.1, parameters=[1, 2]), TypeError),
])
def test_bad_arguments(make, error):
    with pytest.raises(error):
        make()


def test_minimize_needs_a_variable_loss():
    with pytest.raises(TypeError, match="loss"):
        paddle.optimizer.SGD(0.1).minimize("loss")
