"""Seed 004 (LarsMomentumOptimizer): the four examples, verbatim except the import line, with the
values their comments state asserted instead of printed; and the values the reference system
printed for the same examples with fixed weights (paddle_behaviour.md §1.6)."""
import numpy as np
import pytest

from tests.optimizer.test_lars_static import lars_ref


def test_static_example_trains():
    import headrace.fluid as fluid
    np_inp = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    inp = fluid.layers.data(
        name="inp", shape=[2, 2], append_batch_size=False)
    out = fluid.layers.fc(inp, size=3)
    out = fluid.layers.reduce_sum(out)
    optimizer = fluid.optimizer.LarsMomentumOptimizer(learning_rate=0.001, momentum=0.9)
    optimizer.minimize(out)

    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    first = exe.run(
        feed={"inp": np_inp},
        fetch_list=[out.name])

    types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert types == ["mul", "elementwise_add", "reduce_sum", "fill_constant", "reduce_sum_grad",
                     "elementwise_add_grad", "mul_grad", "lars_momentum", "lars_momentum"]
    second = exe.run(feed={"inp": np_inp}, fetch_list=[out.name])
    assert second[0] < first[0]   # a descent step on sum(out)


def _static_fixed_weights(exclude=None):
    import headrace.fluid as fluid
    np_inp = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    inp = fluid.layers.data(name="inp", shape=[2, 2], append_batch_size=False)
    w_init = fluid.initializer.NumpyArrayInitializer(np.array([[.1, .2, .3], [.4, .5, .6]]))
    out = fluid.layers.fc(inp, size=3, param_attr=fluid.ParamAttr(initializer=w_init),
                          bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)))
    out = fluid.layers.reduce_sum(out)
    opt = fluid.optimizer.LarsMomentumOptimizer(learning_rate=0.001, momentum=0.9,
                                                exclude_from_weight_decay=exclude)
    opt.minimize(out)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    trace = []
    for _ in range(3):
        [loss] = exe.run(feed={"inp": np_inp}, fetch_list=[out.name])
        trace.append((float(loss), np.array(scope.find_var("fc_0.w_0").get_tensor()),
                      np.array(scope.find_var("fc_0.b_0").get_tensor()),
                      np.array(scope.find_var("fc_0.w_0_velocity_0").get_tensor())))
    return trace


def test_static_example_with_fixed_weights_gives_the_reference_values():
    trace = _static_fixed_weights()
    np.testing.assert_allclose([t[0] for t in trace], [14.4000006, 14.3999844, 14.3999567], rtol=0, atol=2e-6)
    _, w, b, vel_w = trace[0]
    np.testing.assert_allclose(w.ravel(), [0.0999997, 0.1999997, 0.2999997, 0.3999996, 0.4999996, 0.5999995],
                               rtol=0, atol=1e-7)
    np.testing.assert_allclose(b, [0.4999995] * 3, rtol=0, atol=1e-7)
    np.testing.assert_allclose(vel_w.ravel()[0], 3.0549725e-07, rtol=1e-5)


def test_static_example_excluding_the_bias_from_weight_decay():
    trace = _static_fixed_weights(exclude=["b_0"])
    # plain momentum with the full learning rate for the bias (its gradient is 2 per element)
    np.testing.assert_allclose([t[2][0] for t in trace], [0.498, 0.4942, 0.48878], rtol=0, atol=1e-6)


def test_dygraph_clear_gradients_example():
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        value = np.arange(26).reshape(2, 13).astype("float32")
        a = fluid.dygraph.to_variable(value)
        linear = fluid.Linear(13, 5, dtype="float32")
        w0 = linear.weight.numpy().astype(np.float64)
        optimizer = fluid.optimizer.LarsMomentumOptimizer(learning_rate=0.001, momentum=0.9,
                                      parameter_list=linear.parameters())
        out = linear(a)
        out.backward()
        optimizer.minimize(out)
        optimizer.clear_gradients()

        # out.backward() starts from ones: dW[i, :] = sum of column i, db = 2 (the batch size)
        grad_w = np.repeat(value.sum(axis=0, keepdims=True).T, 5, axis=1).astype(np.float64)
        want_w, _ = lars_ref(w0, grad_w, np.zeros_like(w0), 0.001, 0.9, 0.001, 0.0005)
        np.testing.assert_allclose(linear.weight.numpy(), want_w, rtol=1e-6)
        # a zero-initialised bias has ||b|| = 0: plain momentum with the full learning rate
        np.testing.assert_allclose(linear.bias.numpy(), [-0.002] * 5, rtol=1e-6)
        assert not linear.weight.grad.numpy().any() and not linear.bias.grad.numpy().any()


def test_dygraph_example_with_fixed_weights_gives_the_reference_values():
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        value = np.arange(26).reshape(2, 13).astype("float32")
        linear = fluid.Linear(13, 5, dtype="float32")
        linear.weight.set_value(np.full([13, 5], 0.01, np.float32))
        opt = fluid.optimizer.LarsMomentumOptimizer(learning_rate=0.001, momentum=0.9,
                                                    parameter_list=linear.parameters())
        out = linear(fluid.dygraph.to_variable(value))
        out.backward()
        opt.minimize(out)
        np.testing.assert_allclose(linear.bias.numpy(), [-0.002] * 5, rtol=1e-6)
        np.testing.assert_allclose(linear.weight.numpy()[0], [0.0099999951] * 5, rtol=0, atol=1e-9)


def test_current_step_lr_example_1_without_decay():
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        emb = fluid.dygraph.Embedding([10, 10])
        adam = fluid.optimizer.Adam(0.001, parameter_list = emb.parameters())
        lr = adam.current_step_lr()
        assert lr == 0.001  # 0.001
        assert adam.get_lr() == 0.001


def test_current_step_lr_example_2_piecewise_decay():
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        inp = np.random.uniform(-0.1, 0.1, [10, 10]).astype("float32")
        linear = fluid.dygraph.nn.Linear(10, 10)
        inp = fluid.dygraph.to_variable(inp)
        out = linear(inp)
        loss = fluid.layers.reduce_mean(out)

        bd = [2, 4, 6, 8]
        value = [0.2, 0.4, 0.6, 0.8, 1.0]
        adam = fluid.optimizer.Adam(fluid.dygraph.PiecewiseDecay(bd, value, 0),
                           parameter_list=linear.parameters())

        # first step: learning rate is 0.2
        assert np.allclose(adam.current_step_lr(), 0.2, rtol=1e-06, atol=0.0) # True

        # learning rate for different steps
        ret = [0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8, 1.0, 1.0, 1.0, 1.0]
        for i in range(12):
            adam.minimize(loss)
            lr = adam.current_step_lr()
            assert np.allclose(lr, ret[i], rtol=1e-06, atol=0.0) # True


def test_piecewise_decay_drives_the_updates_in_dygraph_mode():
    """The rates current_step_lr reports are the rates the updates used (SGD: p -= lr * g)."""
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        linear = fluid.dygraph.nn.Linear(3, 1, bias_attr=False)
        sgd = fluid.optimizer.SGD(fluid.dygraph.PiecewiseDecay([1, 2], [0.5, 0.25, 0.125], 0),
                                  parameter_list=linear.parameters())
        assert sgd.current_step_lr() == 0.5 and sgd.get_lr() == 0.5
        x = np.array([[1.0, 2.0, 3.0]], np.float32)
        for rate in (0.5, 0.25, 0.125, 0.125):
            before = linear.weight.numpy()
            fluid.layers.reduce_sum(linear(fluid.dygraph.to_variable(x))).backward()
            sgd.step()
            sgd.clear_gradients()
            np.testing.assert_allclose(linear.weight.numpy(), before - rate * x.T, rtol=1e-6)
            assert sgd.current_step_lr() == rate


@pytest.mark.parametrize("begin,step,want", [(0, 1, [0.2, 0.2, 0.4]), (3, 1, [0.4, 0.6, 0.6]),
                                             (0, 2, [0.2, 0.4, 0.6])])
def test_piecewise_decay_begin_and_step(begin, step, want):
    import headrace.fluid as fluid
    with fluid.dygraph.guard():
        linear = fluid.dygraph.nn.Linear(2, 2)
        adam = fluid.optimizer.Adam(fluid.dygraph.PiecewiseDecay([2, 4, 6, 8], [0.2, 0.4, 0.6, 0.8, 1.0],
                                                                 begin, step),
                                    parameter_list=linear.parameters())
        got = []
        for _ in range(3):
            adam.step()
            got.append(adam.current_step_lr())
        assert got == want
