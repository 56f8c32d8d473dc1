"""Optimizer API edges found by review: clones keep the learning-rate schedule, dygraph
backward/apply_optimize/minimize(grad_clip=), state loading under other names, global-norm
clipping across float32 and float64 gradients, schedule validation."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context
from headrace.nn.layer import create_parameter
from headrace.optimizer import clip, lr
from headrace.optimizer.lars import LarsMomentum
from headrace.runtime import Executor, Scope


def _static_sgd(learning_rate):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        w = create_parameter([2], "float32", attr=paddle.ParamAttr(name="w"))
        loss = paddle.sum(w)                 # gradient 1 everywhere
        opt = paddle.optimizer.SGD(learning_rate)
        opt.minimize(loss)
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    scope.find_var("w").get_tensor().set(np.zeros(2, np.float32))
    return main, opt, scope, exe


def _w(scope):
    return np.array(scope.find_var("w").get_tensor())


def test_a_clone_of_a_training_program_keeps_the_schedule_and_set_lr():
    sched = lr.PiecewiseDecay([1], [1.0, 0.0])
    main, opt, scope, exe = _static_sgd(sched)
    exe.run(main, scope=scope)
    np.testing.assert_array_equal(_w(scope), [-1, -1])
    sched.step()                             # the rate is now 0
    clone = main.clone()
    exe.run(clone, scope=scope)
    np.testing.assert_array_equal(_w(scope), [-1, -1])

    main, opt, scope, exe = _static_sgd(0.5)
    clone = main.clone()
    opt.set_lr(0.25)                         # after the clone was made
    exe.run(clone, scope=scope)
    np.testing.assert_array_equal(_w(scope), [-0.25, -0.25])
    compiled = static.CompiledProgram(main.clone())
    exe.run(compiled, scope=scope)
    np.testing.assert_array_equal(_w(scope), [-0.5, -0.5])


def test_dygraph_backward_collects_the_gradients_loss_backward_left():
    with context.static_mode_guard(False):
        w = create_parameter([3], "float64", default_initializer=paddle.nn.initializer.Constant(1.0))
        opt = paddle.optimizer.SGD(0.1, parameters=[w])
        loss = paddle.scale(paddle.sum(w), 0.5)
        loss.backward()
        params_grads = opt.backward(loss)    # the reference's pattern: it does not run backward again
        assert [p is w for p, _ in params_grads] == [True]
        np.testing.assert_array_equal(params_grads[0][1].numpy(), [0.5] * 3)
        opt.apply_optimize(loss, None, params_grads)
        np.testing.assert_allclose(w.numpy(), [1 - 0.1 * 0.5] * 3, rtol=1e-7)


@pytest.mark.parametrize("mode", ["static", "eager"])
def test_minimize_grad_clip_clips_that_update_only(mode):
    """fluid 1.x ``minimize(loss, grad_clip=...)``: this update is clipped, the optimizer's own
    setting (none here) is back afterwards."""
    def step(opt, w, grad_clip):
        loss = paddle.sum(w * paddle.assign(np.array([3.0, 4.0])))
        loss.backward()
        opt.minimize(loss, grad_clip=grad_clip)
        opt.clear_grad()
    if mode == "eager":
        with context.static_mode_guard(False):
            w = create_parameter([2], "float64", default_initializer=paddle.nn.initializer.Constant(0.0))
            opt = paddle.optimizer.SGD(1.0, parameters=[w])
            step(opt, w, clip.ClipGradByGlobalNorm(1.0))      # gradient [3, 4], norm 5 -> [0.6, 0.8]
            np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-12)
            step(opt, w, None)
            np.testing.assert_allclose(w.numpy(), [-3.6, -4.8], rtol=1e-12)
            assert opt._grad_clip is None
        return
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        w = create_parameter([2], "float64", attr=paddle.ParamAttr(name="w"))
        loss = paddle.sum(w * paddle.assign(np.array([3.0, 4.0])))
        opt = paddle.optimizer.SGD(1.0)
        opt.minimize(loss, grad_clip=clip.ClipGradByGlobalNorm(1.0))
    assert opt._grad_clip is None
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    scope.find_var("w").get_tensor().set(np.zeros(2))
    exe.run(main, scope=scope)
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), [-0.6, -0.8], rtol=1e-12)


def test_set_state_dict_under_other_parameter_names_is_an_error():
    with context.static_mode_guard(False):
        net = paddle.nn.Linear(2, 2)
        opt = paddle.optimizer.Momentum(0.1, parameters=net.parameters())
        paddle.sum(net(paddle.ones([1, 2]))).backward()
        opt.step()
        saved = {k: v.numpy() for k, v in opt.state_dict().items()}
        net2 = paddle.nn.Linear(2, 2)          # same process: linear_1.*, not linear_0.*
        opt2 = paddle.optimizer.Momentum(0.1, parameters=net2.parameters())
        opt2.set_state_dict(saved)
        paddle.sum(net2(paddle.ones([1, 2]))).backward()
        with pytest.raises(KeyError, match="no value for accumulator 'linear_1.*velocity.*other names"):
            opt2.step()


@pytest.mark.parametrize("mode", ["static", "eager"])
def test_global_norm_clip_over_float32_and_float64_gradients(mode):
    """The norm is summed in float64 when any gradient is float64; each gradient is scaled in its
    own dtype."""
    init = {"a": np.array([3.0, 0.0], np.float32), "b": np.array([0.0, 4.0, 12.0])}   # norm 13

    def loss_of(a, b):
        return paddle.cast(paddle.scale(paddle.sum(paddle.square(a)), 0.5), "float64") + \
            paddle.scale(paddle.sum(paddle.square(b)), 0.5)       # gradients: a, b
    make = lambda params: paddle.optimizer.SGD(1.0, parameters=params,  # noqa: E731
                                               grad_clip=clip.ClipGradByGlobalNorm(6.5))
    if mode == "eager":
        with context.static_mode_guard(False):
            a = create_parameter([2], "float32")
            b = create_parameter([3], "float64")
            a.set_value(init["a"])
            b.set_value(init["b"])
            opt = make([a, b])
            loss_of(a, b).backward()
            opt.step()
            got = {"a": a.numpy(), "b": b.numpy()}
    else:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            a = create_parameter([2], "float32", attr=paddle.ParamAttr(name="a"))
            b = create_parameter([3], "float64", attr=paddle.ParamAttr(name="b"))
            make(None).minimize(loss_of(a, b))
        scope, exe = Scope(), Executor()
        exe.run(startup, scope=scope)
        for k, v in init.items():
            scope.find_var(k).get_tensor().set(v.copy())
        exe.run(main, scope=scope)
        got = {k: np.array(scope.find_var(k).get_tensor()) for k in init}
    assert got["a"].dtype == np.float32 and got["b"].dtype == np.float64
    np.testing.assert_allclose(got["a"], init["a"] * 0.5, rtol=1e-7)     # scale 6.5 / 13
    np.testing.assert_allclose(got["b"], init["b"] * 0.5, rtol=1e-15)


def test_schedule_validation_and_state():
    with pytest.raises(ValueError, match="must be >= 0"):
        paddle.optimizer.SGD(lr.StepDecay(-0.1, 2))
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="must be >= 0"):
            paddle.optimizer.SGD(bad)
        with pytest.raises(ValueError, match="must be >= 0"):
            paddle.optimizer.SGD(0.1).set_lr(bad)
    sched = lr.LambdaDecay(0.1, lambda epoch: 1 - epoch)
    with pytest.raises(ValueError, match="LambdaDecay: the learning rate of epoch 2 is -0.1"):
        sched.step()
        sched.step()
    warm = lr.LinearWarmup(lr.ExponentialDecay(1.0, 0.5), warmup_steps=1, start_lr=0.0, end_lr=0.5)
    for _ in range(3):
        warm.step()
    state = warm.state_dict()
    assert state["LinearWarmup_LR"] == {"last_epoch": 2, "last_lr": 0.25}
    other = lr.LinearWarmup(lr.ExponentialDecay(1.0, 0.5), warmup_steps=1, start_lr=0.0, end_lr=0.5)
    other.set_state_dict(state)
    assert other() == warm() == 0.25 and other.learning_rate() == 0.25


def test_fluid_decay_in_static_mode_names_the_public_class():
    import headrace.fluid as fluid
    with pytest.raises(TypeError, match=r"fluid.dygraph.PiecewiseDecay is a dygraph"):
        fluid.optimizer.SGD(fluid.dygraph.PiecewiseDecay([1], [0.1, 0.2], 0))


def test_lars_multi_precision_is_accepted_for_float32_parameters():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        w = create_parameter([2], "float32")
        ops, _ = LarsMomentum(0.1, 0.9, multi_precision=True).minimize(paddle.sum(w))
    assert [op.type for op in ops] == ["lars_momentum"]
