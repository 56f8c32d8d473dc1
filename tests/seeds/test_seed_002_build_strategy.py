"""Seed 002 (BuildStrategy): the documentation's examples with only the imports changed and
``use_cuda = False``; values checked against paddle_behaviour.md §6.3."""
import os

import numpy as np


def test_seed_002_class_example(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    import headrace as paddle
    import headrace.static as static
    paddle.enable_static()
    os.environ['CPU_NUM'] = str(2)
    places = static.cpu_places()
    data = static.data(name="x", shape=[None, 1], dtype="float32")
    hidden = static.nn.fc(x=data, size=10)
    loss = paddle.mean(hidden)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    build_strategy = static.BuildStrategy()
    build_strategy.enable_inplace = True
    build_strategy.memory_optimize = True
    build_strategy.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
    program = static.CompiledProgram(static.default_main_program())
    program = program.with_data_parallel(loss_name=loss.name,
                                         build_strategy=build_strategy,
                                         places=places)
    # beyond the example: it runs, and splits the batch over the two places
    exe = static.Executor(static.CPUPlace())
    exe.run(static.default_startup_program())
    out, = exe.run(program, feed={"x": np.arange(10, dtype="float32").reshape(10, 1) / 10}, fetch_list=[loss])
    assert out.shape == (2,)


def test_seed_002_attribute_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import headrace as paddle
    import headrace.static as static
    paddle.enable_static()
    build_strategy = static.BuildStrategy()
    build_strategy.debug_graphviz_path = "./graph"
    build_strategy = static.BuildStrategy()
    build_strategy.enable_sequential_execution = True
    build_strategy = static.BuildStrategy()
    build_strategy.fuse_broadcast_ops = True
    build_strategy = static.BuildStrategy()
    build_strategy.fuse_elewise_add_act_ops = True
    build_strategy = static.BuildStrategy()
    build_strategy.fuse_relu_depthwise_conv = True
    build_strategy = static.BuildStrategy()
    build_strategy.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
    build_strategy = static.BuildStrategy()
    build_strategy.remove_unnecessary_lock = True
    build_strategy = static.BuildStrategy()
    build_strategy.sync_batch_norm = True
    assert build_strategy.sync_batch_norm is True


def test_seed_002_gradient_scale_example(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    import numpy
    import os
    import headrace as paddle
    import headrace.static as static
    paddle.enable_static()
    use_cuda = False
    place = paddle.CUDAPlace(0) if use_cuda else paddle.CPUPlace()
    exe = static.Executor(place)
    if not use_cuda:
        os.environ['CPU_NUM'] = str(2)
        places = static.cpu_places()
    else:
        places = static.cuda_places()
    data = static.data(name='X', shape=[None, 1], dtype='float32')
    hidden = static.nn.fc(x=data, size=10)
    loss = paddle.mean(hidden)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe.run(static.default_startup_program())
    build_strategy = static.BuildStrategy()
    build_strategy.gradient_scale_strategy = \
        static.BuildStrategy.GradientScaleStrategy.Customized
    compiled_prog = static.CompiledProgram(
        static.default_main_program()).with_data_parallel(
            loss_name=loss.name, build_strategy=build_strategy,
            places=places)
    dev_count = len(places)
    x = numpy.random.random(size=(10, 1)).astype('float32')
    loss_grad = numpy.ones((dev_count)).astype("float32") * 0.01
    loss_grad_name = loss.name + "@GRAD"
    loss_data = exe.run(compiled_prog,
                        feed={"X": x, loss_grad_name: loss_grad},
                        fetch_list=[loss.name, loss_grad_name])
    # §6.3: the loss comes back per place, loss@GRAD is the fed value per place
    assert loss_data[0].shape == (2,)
    np.testing.assert_allclose(loss_data[1], [0.01, 0.01])
