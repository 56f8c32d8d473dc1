"""Seed 000 (RecomputeOptimizer): its four examples with only the import lines changed.

Example 1 trains with checkpoints; its losses must be bit-identical to the same script with the
optimizer left unwrapped, and fall on a fixed batch.  Examples 2-4 call ``backward`` without
``_set_checkpoints`` (the reference raises there; headrace logs a warning and runs the plain
backward, so the documented examples work) and then ``apply_gradients`` / ``apply_optimize``.
"""
import logging

import numpy as np
import pytest

import headrace


def _example_1(capsys, recompute: bool):
    import headrace.fluid as fluid
    headrace.seed(0)
    np.random.seed(0)
    batch = {"x": np.random.random(size=(32, 32)).astype('float32'),
             "y": np.random.randint(2, size=(32, 1)).astype('int64')}

    def gen_data():
        return batch

    def mlp(input_x, input_y, hid_dim=128, label_dim=2):
        print(input_x)
        fc_1 = fluid.layers.fc(input=input_x, size=hid_dim)
        prediction = fluid.layers.fc(input=[fc_1], size=label_dim, act='softmax')
        cost = fluid.layers.cross_entropy(input=prediction, label=input_y)
        sum_cost = fluid.layers.reduce_mean(cost)
        return sum_cost, fc_1, prediction
    input_x = fluid.layers.data(name="x", shape=[32], dtype='float32')
    input_y = fluid.layers.data(name="y", shape=[1], dtype='int64')
    cost, fc_1, pred = mlp(input_x, input_y)

    sgd = fluid.optimizer.Adam(learning_rate=0.01)
    if recompute:
        sgd = fluid.optimizer.RecomputeOptimizer(sgd)
        sgd._set_checkpoints([fc_1, pred])
    sgd.minimize(cost)

    print("Finished optimize")
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(fluid.default_startup_program())
    step = 10

    losses = []
    for i in range(step):
        cost_val = exe.run(feed=gen_data(),
               program=fluid.default_main_program(),
               fetch_list=[cost.name])
        print("step=%d cost=%f" % (i, cost_val[0]))
        losses.append(cost_val[0])
    return losses, fluid.default_main_program()


def test_example_1_trains_bit_identically_to_the_unwrapped_optimizer(capsys):
    from headrace.core import context, names
    from headrace.core.program import Program
    plain, _ = _example_1(capsys, recompute=False)
    context.switch_main_program(Program())
    context.switch_startup_program(Program())
    names.switch()
    with_recompute, program = _example_1(capsys, recompute=True)
    assert all(np.array_equal(a, b) for a, b in zip(plain, with_recompute))
    assert float(with_recompute[-1]) < float(with_recompute[0])
    out = capsys.readouterr().out
    assert "Finished optimize" in out and "step=9 cost=" in out
    types = [op.type for op in program.global_block().ops]
    assert types.count("adam") == 4


def _mlp(fluid):
    def mlp(input_x, input_y, hid_dim=128, label_dim=2):
        fc_1 = fluid.layers.fc(input=input_x, size=hid_dim)
        prediction = fluid.layers.fc(input=[fc_1], size=label_dim, act='softmax')
        cost = fluid.layers.cross_entropy(input=prediction, label=input_y)
        sum_cost = fluid.layers.reduce_mean(cost)
        return sum_cost, fc_1, prediction
    return mlp


def _train_once(fluid, cost):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feed = {"x": np.random.random(size=(8, 32)).astype('float32'),
            "y": np.random.randint(2, size=(8, 1)).astype('int64')}
    return [float(exe.run(feed=feed, fetch_list=[cost])[0]) for _ in range(30)]


def test_example_2_apply_gradients(caplog):
    import headrace.fluid as fluid
    import headrace.fluid.framework as framework
    mlp = _mlp(fluid)

    input_x = fluid.layers.data(name="x", shape=[32], dtype='float32')
    input_y = fluid.layers.data(name="y", shape=[1], dtype='int64')
    cost, fc_1, pred = mlp(input_x, input_y)
    print("Finished FF")

    sgd = fluid.optimizer.Adam(learning_rate=0.01)
    sgd = fluid.optimizer.RecomputeOptimizer(sgd)
    with caplog.at_level(logging.WARNING, logger="headrace.recompute"):
        params_grads = sgd.backward(
            cost,
            startup_program=None,
            parameter_list=None,
            no_grad_set=None)
    assert "_set_checkpoints" in caplog.text

    program = cost.block.program
    with framework.program_guard(program, None):
        optimize_ops = sgd.apply_gradients(params_grads)

    print("Finished apply gradients")
    assert [op.type for op in optimize_ops] == ["adam"] * 4
    assert isinstance(params_grads, list) and len(params_grads) == 4
    losses = _train_once(fluid, cost)
    assert losses[-1] < 0.5 * losses[0], losses


def test_example_3_apply_optimize():
    import headrace.fluid as fluid
    mlp = _mlp(fluid)

    input_x = fluid.layers.data(name="x", shape=[32], dtype='float32')
    input_y = fluid.layers.data(name="y", shape=[1], dtype='int64')
    cost, fc_1, pred = mlp(input_x, input_y)
    print("Finished FF")

    sgd = fluid.optimizer.Adam(learning_rate=0.01)
    sgd = fluid.optimizer.RecomputeOptimizer(sgd)
    params_grads = sgd.backward(
        cost,
        startup_program=None,
        parameter_list=None,
        no_grad_set=None)

    optimize_ops = sgd.apply_optimize(
        cost, startup_program=None, params_grads=params_grads)

    print("Finished apply_optimize")
    assert [op.type for op in optimize_ops] == ["adam"] * 4
    losses = _train_once(fluid, cost)
    assert losses[-1] < 0.5 * losses[0], losses


def test_example_4_backward_with_checkpoints_returns_a_list():
    import headrace.fluid as fluid
    mlp = _mlp(fluid)

    input_x = fluid.layers.data(name="x", shape=[32], dtype='float32')
    input_y = fluid.layers.data(name="y", shape=[1], dtype='int64')
    cost, fc_1, pred = mlp(input_x, input_y)
    print("Finished FF")

    sgd = fluid.optimizer.Adam(learning_rate=0.01)
    sgd = fluid.optimizer.RecomputeOptimizer(sgd)
    sgd._set_checkpoints([fc_1, pred])   # the doc's backward() section is about checkpoints
    params_grads = sgd.backward(
        cost,
        startup_program=None,
        parameter_list=None,
        no_grad_set=None)
    assert [(p.name, g.name) for p, g in params_grads] == [
        ("fc_0.w_0", "fc_0.w_0@GRAD"), ("fc_0.b_0", "fc_0.b_0@GRAD"),
        ("fc_1.w_0", "fc_1.w_0@GRAD"), ("fc_1.b_0", "fc_1.b_0@GRAD")]


def test_reference_errors():
    import headrace.fluid as fluid
    sgd = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(NotImplementedError, match="load function is not supported by Recompute Optimizer"):
        sgd.load({})
    with pytest.raises(TypeError, match="_checkpoints should be a list of Variable or a list of String"):
        sgd._set_checkpoints((1,))
    with pytest.raises(TypeError, match="Optimizer"):
        fluid.optimizer.RecomputeOptimizer("sgd")
    assert sgd.get_lr() == pytest.approx(0.1)
