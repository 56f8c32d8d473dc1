"""Eager optimizers run the static update kernels: SGD/Momentum/Adam trajectories in dygraph mode
equal the static ones for the same net and weights; step/clear_grad/minimize/parameter_list."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core import context
from headrace.runtime import Executor, Scope

OPTIMIZERS = {
    "sgd": lambda params: paddle.optimizer.SGD(0.1, parameters=params),
    "momentum": lambda params: paddle.optimizer.Momentum(0.05, momentum=0.8, parameters=params,
                                                         use_nesterov=True),
    "adam": lambda params: paddle.optimizer.Adam(0.01, parameters=params),
    # gradient clipping then weight decay, in both modes (the first weight has its own L1Decay)
    "sgd_decay_global_norm": lambda params: paddle.optimizer.SGD(
        0.1, parameters=params, weight_decay=0.05, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.3)),
    "momentum_l1_by_value": lambda params: paddle.optimizer.Momentum(
        0.05, momentum=0.8, parameters=params, weight_decay=paddle.regularizer.L1Decay(0.01),
        grad_clip=paddle.nn.ClipGradByValue(0.05)),
    "adam_by_norm": lambda params: paddle.optimizer.Adam(
        0.01, parameters=params, grad_clip=paddle.nn.ClipGradByNorm(0.2)),
}


def _net():
    return paddle.nn.Sequential(
        paddle.nn.Linear(4, 5, weight_attr=paddle.ParamAttr(learning_rate=0.5,
                                                             regularizer=paddle.regularizer.L1Decay(0.02))),
        paddle.nn.ReLU(),
        paddle.nn.Linear(5, 1))


def _batches():
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 1)).astype(np.float32))
            for _ in range(3)]


def _loss(out, y):
    d = out - y
    return paddle.mean(d * d)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_eager_trajectory_equals_static(name):
    paddle.seed(3)
    net = _net()
    init = [p.numpy() for p in net.parameters()]
    opt = OPTIMIZERS[name](net.parameters())
    eager = []
    for x, y in _batches():
        _loss(net(paddle.to_tensor(x)), paddle.to_tensor(y)).backward()
        opt.step()
        opt.clear_grad()
        eager.append([p.numpy() for p in net.parameters()])

    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        x_var, y_var = static.data("x", [-1, 4]), static.data("y", [-1, 1])
        snet = _net()
        OPTIMIZERS[name](None).minimize(_loss(snet(x_var), y_var))
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    for p, v in zip(snet.parameters(), init):
        scope.var(p.name).get_tensor().set(v)
    for (x, y), want in zip(_batches(), eager):
        exe.run(main, feed={"x": x, "y": y}, scope=scope)
        for p, w in zip(snet.parameters(), want):
            np.testing.assert_allclose(scope.find_var(p.name).get_tensor().numpy(), w, rtol=1e-6, atol=1e-7)
    assert not np.allclose(eager[-1][0], init[0])


def test_parameters_are_required_in_dygraph_mode():
    with pytest.raises(AttributeError, match="should not be None in dygraph mode"):
        paddle.optimizer.SGD(0.1)


def test_step_skips_parameters_without_gradient_and_clear_grad_zeroes():
    paddle.seed(0)
    a, b = paddle.nn.Linear(2, 2), paddle.nn.Linear(2, 2)
    opt = paddle.optimizer.SGD(0.5, parameters=a.parameters() + b.parameters())
    before_b = [p.numpy() for p in b.parameters()]
    a(paddle.ones([1, 2])).sum().backward()
    w_grad = a.weight.grad.numpy()
    w_before = a.weight.numpy()
    opt.step()
    np.testing.assert_allclose(a.weight.numpy(), w_before - 0.5 * w_grad, rtol=1e-6)
    for p, v in zip(b.parameters(), before_b):
        np.testing.assert_array_equal(p.numpy(), v)
    opt.clear_grad()
    assert not a.weight.grad.numpy().any()
    opt.clear_grad(set_to_zero=False)
    assert a.weight.grad is None


def test_fluid_style_minimize_applies_existing_gradients():
    """Seed 004's dygraph example shape: backward, then minimize(loss), then clear_gradients()."""
    with fluid.dygraph.guard():
        value = np.arange(26).reshape(2, 13).astype("float32")
        a = fluid.dygraph.to_variable(value)
        linear = fluid.Linear(13, 5, dtype="float32")
        optimizer = fluid.optimizer.SGD(learning_rate=0.001, parameter_list=linear.parameters())
        w_before = linear.weight.numpy()
        out = linear(a)
        out.backward()                       # non-scalar: starts from ones
        ops, params_grads = optimizer.minimize(out)
        assert [p.name for p, _ in params_grads] == ["linear_0.w_0", "linear_0.b_0"]
        grad = np.repeat(value.sum(axis=0, keepdims=True).T, 5, axis=1)
        np.testing.assert_allclose(linear.weight.numpy(), w_before - 0.001 * grad, rtol=1e-5)
        optimizer.clear_gradients()
        assert not linear.weight.grad.numpy().any()


def test_fluid_embedding_and_adam():
    with fluid.dygraph.guard():
        emb = fluid.dygraph.Embedding([10, 10])
        adam = fluid.optimizer.Adam(0.001, parameter_list=emb.parameters())
        assert adam.get_lr() == 0.001
        out = emb(paddle.to_tensor(np.array([[1, 2]], np.int64)))
        assert out.shape == [1, 2, 10]
        before = emb.weight.numpy()
        fluid.layers.reduce_mean(out).backward()
        adam.minimize(out)
        changed = np.abs(emb.weight.numpy() - before).sum(axis=1) > 0
        assert changed.tolist() == [False, True, True] + [False] * 7


def test_step_in_static_mode_is_an_error():
    opt = paddle.optimizer.SGD(0.1, parameters=paddle.nn.Linear(2, 2).parameters())
    with context.static_mode_guard(True), pytest.raises(RuntimeError, match="dygraph mode"):
        opt.step()


@pytest.mark.parametrize("make", [
    lambda params: paddle.optimizer.Adam(paddle.optimizer.lr.StepDecay(0.05, step_size=2, gamma=0.5),
                                         parameters=params),
    lambda params: paddle.optimizer.Momentum(0.05, momentum=0.9, parameters=params, use_nesterov=True),
    lambda params: fluid.optimizer.Adam(fluid.dygraph.PiecewiseDecay([2, 4], [0.1, 0.05, 0.01], 0),
                                        parameter_list=params),
], ids=["adam_step_decay", "momentum", "adam_fluid_piecewise"])
def test_state_dict_resumes_training_exactly(make):
    """Train 3 steps, save layer + optimizer state, train 2 more; a fresh net and optimizer loaded
    from the saved state (before their first step) train the same 2 steps bit for bit."""
    def train(net, opt, batches):
        for x, y in batches:
            _loss(net(paddle.to_tensor(x)), paddle.to_tensor(y)).backward()
            opt.step()
            opt.clear_grad()
            sched = opt._learning_rate
            if isinstance(sched, paddle.optimizer.lr.LRScheduler):
                sched.step()
    batches = _batches() + _batches()[:2]
    paddle.seed(5)
    net = _net()
    opt = make(net.parameters())
    assert opt.state_dict() == {} or list(opt.state_dict()) == ["LR_Scheduler"]
    train(net, opt, batches[:3])
    saved_net = {k: v.numpy() for k, v in net.state_dict().items()}
    saved_opt = {k: (v.numpy() if isinstance(v, paddle.Tensor) else dict(v)) for k, v in opt.state_dict().items()}
    assert len([k for k in saved_opt if k != "LR_Scheduler"]) >= 4
    train(net, opt, batches[3:])
    want = [p.numpy() for p in net.parameters()]

    from headrace.core import names
    with names.guard():               # a new process would name the accumulators the same way
        paddle.seed(99)
        net2 = _net()
        opt2 = make(net2.parameters())
        net2.set_state_dict(saved_net)
        opt2.set_state_dict(saved_opt)
        train(net2, opt2, batches[3:])
    for p, w in zip(net2.parameters(), want):
        assert np.array_equal(p.numpy(), w), p.name


def test_set_state_dict_errors():
    net = _net()
    opt = paddle.optimizer.Momentum(0.1, parameters=net.parameters())
    _loss(net(paddle.ones([2, 4])), paddle.ones([2, 1])).backward()
    opt.step()
    state = {k: v.numpy() for k, v in opt.state_dict().items()}
    name = next(iter(state))
    with pytest.raises(ValueError, match="has shape"):
        opt.set_state_dict(dict(state, **{name: np.zeros([7])}))
    # a saved schedule is ignored by a number learning rate (fine-tuning at a fixed rate) ...
    opt.set_state_dict(dict(state, LR_Scheduler={"last_epoch": 1, "last_lr": 0.1}))
    # ... but a scheduled optimizer needs the schedule's state
    sched_opt = paddle.optimizer.Momentum(paddle.optimizer.lr.StepDecay(0.1, 2), parameters=net.parameters())
    with pytest.raises(KeyError, match="no 'LR_Scheduler' entry"):
        sched_opt.set_state_dict({})
    with context.static_mode_guard(True):   # an eager optimizer's state stays its Tensors
        assert sorted(opt.state_dict()) == sorted(state)


def test_set_state_dict_after_the_first_step_must_cover_every_accumulator():
    """A second optimizer names its accumulators ..._velocity_1: loading ..._velocity_0 into it
    after its first step is an error, not a silent no-op."""
    net = _net()
    first = paddle.optimizer.Momentum(0.1, parameters=net.parameters())
    second = paddle.optimizer.Momentum(0.1, parameters=net.parameters())
    for opt in (first, second):
        _loss(net(paddle.ones([2, 4])), paddle.ones([2, 1])).backward()
        opt.step()
        opt.clear_grad()
    saved = {k: v.numpy() for k, v in first.state_dict().items()}
    with pytest.raises(KeyError, match="_velocity_1"):
        second.set_state_dict(saved)


@pytest.mark.parametrize("order", ["a_then_b", "b_then_a"])
def test_partial_state_is_an_error_in_any_parameter_order(order):
    from headrace.core import names
    with names.guard():
        a = paddle.nn.Linear(2, 2)
        opt = paddle.optimizer.Momentum(0.1, parameters=a.parameters())
        paddle.sum(a(paddle.ones([1, 2]))).backward()
        opt.step()
        saved = {k: v.numpy() for k, v in opt.state_dict().items()}
    with names.guard():
        a, b = paddle.nn.Linear(2, 2), paddle.nn.Linear(2, 2)
        params = a.parameters() + b.parameters() if order == "a_then_b" else b.parameters() + a.parameters()
        opt = paddle.optimizer.Momentum(0.1, parameters=params)
        opt.set_state_dict(saved)
        paddle.sum(b(a(paddle.ones([1, 2])))).backward()
        with pytest.raises(KeyError, match="no value for accumulator 'linear_1"):
            opt.step()


def test_a_fluid_decay_subclass_written_the_1x_way():
    class HalfEveryStep(fluid.dygraph.LearningRateDecay):
        def step(self):
            return self.create_lr_var(0.4 * 0.5 ** self.step_num)
    w = paddle.nn.Linear(1, 1, bias_attr=False)
    opt = fluid.optimizer.SGD(HalfEveryStep(), parameter_list=w.parameters())
    rates = []
    for _ in range(3):
        loss = paddle.sum(w(paddle.ones([1, 1])))
        loss.backward()
        opt.minimize(loss)
        opt.clear_gradients()
        rates.append(opt.current_step_lr())
    assert rates == [0.4, 0.2, 0.1]
    state = opt.state_dict()["LR_Scheduler"]
    assert state == {"step_num": 3, "last_lr": 0.1}
    again = fluid.optimizer.SGD(HalfEveryStep(), parameter_list=w.parameters())
    again.set_state_dict({"LR_Scheduler": state})
    assert again.current_step_lr() == 0.1
