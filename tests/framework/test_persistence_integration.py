"""Persistence meeting the other features: fetched values, fused optimizer buffers, LR schedules."""
import pickle

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.fetched import ScalarArray


def _fetch_size_one_values():
    main, start = static.Program(), static.Program()
    with static.program_guard(main, start):
        x = static.data("x", [None, 4], "float32")
        loss = fluid.layers.mean(static.nn.fc(x, 1))
    exe = static.Executor()
    scope = static.Scope()
    with static.scope_guard(scope):
        exe.run(start)
        return exe.run(main, feed={"x": np.ones((1, 4), "float32")}, fetch_list=[loss])[0]


def test_user_pickled_fetched_values_load(tmp_path):
    """A size-1 fetched value is a ScalarArray; a pickle of it (the user's own ``pickle.dump`` of a
    metrics dict) loads with paddle.load as the plain ndarray the reference would have fetched."""
    loss = _fetch_size_one_values()
    assert isinstance(loss, ScalarArray)
    path = tmp_path / "metrics.pkl"
    for protocol in (2, 4):
        path.write_bytes(pickle.dumps({"loss": [loss], "step": 3}, protocol=protocol))
        loaded = paddle.load(str(path), return_numpy=True)
        assert type(loaded["loss"][0]) is np.ndarray and loaded["step"] == 3
        np.testing.assert_array_equal(loaded["loss"][0], np.asarray(loss))


def test_static_create_parameter_takes_a_name_and_the_name_is_saved(tmp_path):
    """The reference's signature is (shape, dtype, name=None, attr=None, ...): a named parameter
    is saved and loaded under that name; the ParamAttr passed along is not modified."""
    attr = paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(2.0))
    w = static.create_parameter([2, 3], "float32", name="enc.w", attr=attr)
    b = static.create_parameter([3], "float32", "enc.b", None, True)
    assert (w.name, b.name, attr.name) == ("enc.w", "enc.b", None)
    x = static.data("x", [None, 2], "float32")
    out = paddle.matmul(x, w) + b
    exe = static.Executor()
    exe.run(static.default_startup_program())
    static.save(static.default_main_program(), str(tmp_path / "ck"))
    state = static.load_program_state(str(tmp_path / "ck"))
    np.testing.assert_array_equal(np.asarray(state["enc.w"]), np.full((2, 3), 2.0, "float32"))
    np.testing.assert_array_equal(np.asarray(state["enc.b"]), np.zeros(3, "float32"))
    got = exe.run(feed={"x": np.ones((1, 2), "float32")}, fetch_list=[out])[0]
    np.testing.assert_array_equal(got, np.full((1, 3), 4.0, "float32"))


def _dygraph_lamb_run(steps, state=None):
    """A Linear trained with the 1.x LambOptimizer under a NoamDecay schedule, in a fresh name
    space (as a fresh process would have), from ``state`` (load_dygraph's pair) if given."""
    with fluid.dygraph.guard():
        paddle.seed(0)
        model = paddle.nn.Linear(4, 3)
        opt = fluid.optimizer.LambOptimizer(learning_rate=fluid.dygraph.NoamDecay(16, 4),
                                            parameter_list=model.parameters())
        if state is not None:
            model.set_dict(state[0])
            opt.set_dict(state[1])
        x = paddle.to_tensor(np.random.RandomState(1).rand(5, 4).astype("float32"))
        for _ in range(steps):
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.minimize(loss)
            model.clear_gradients()
        return model, opt


def test_save_dygraph_load_dygraph_resume_bit_identical(tmp_path):
    prefix = str(tmp_path / "ck" / "model")
    model, opt = _dygraph_lamb_run(3)
    with fluid.dygraph.guard():
        fluid.dygraph.save_dygraph(model.state_dict(), prefix)
        fluid.save_dygraph(opt.state_dict(), prefix)
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["model.pdopt", "model.pdparams"]
    straight, _ = _dygraph_lamb_run(6)
    params, opt_state = fluid.load_dygraph(prefix + ".pdparams")   # a suffix is ignored
    assert isinstance(params["weight"], np.ndarray) and "LR_Scheduler" in opt_state
    resumed, _ = _dygraph_lamb_run(3, (params, opt_state))
    with fluid.dygraph.guard():
        for a, b in zip(straight.parameters(), resumed.parameters()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    (tmp_path / "ck" / "model.pdopt").unlink()
    assert fluid.dygraph.load_dygraph(prefix)[1] is None
    with pytest.raises(ValueError, match="neither"):
        fluid.dygraph.load_dygraph(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="empty file prefix"):
        fluid.dygraph.save_dygraph({}, str(tmp_path) + "/")


def _fc_momentum_program():
    paddle.seed(0)
    main, start = static.Program(), static.Program()
    with fluid.unique_name.guard(), static.program_guard(main, start):
        x = static.data("x", [None, 4], "float32")
        y = static.nn.fc(static.nn.fc(x, 8, activation="relu"), 3)
        loss = paddle.mean(y * y)
        paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)
    return main, start, loss


def _losses_after_set_value(fuse):
    """Train 2 steps, save every persistable with get_value, train 2 more, put the saved values
    back with set_value (parameters are views of a flat buffer when fused), train 3 steps."""
    main, start, loss = _fc_momentum_program()
    feed = {"x": np.random.RandomState(1).rand(6, 4).astype("float32")}
    with static.scope_guard(static.Scope()):
        exe = static.Executor()
        exe.run(start)
        prog = main
        if fuse:
            strategy = static.BuildStrategy()
            strategy.fuse_all_optimizer_ops = True
            prog = static.CompiledProgram(main, build_strategy=strategy)
        for _ in range(2):
            exe.run(prog, feed=feed, fetch_list=[loss])
        saved = {v.name: np.array(v.get_value()) for v in main.list_vars() if v.persistable}
        for _ in range(2):
            exe.run(prog, feed=feed, fetch_list=[loss])
        for var in main.list_vars():
            if var.persistable:
                var.set_value(saved[var.name])
        return [float(np.asarray(exe.run(prog, feed=feed, fetch_list=[loss])[0])) for _ in range(3)]


def test_static_variable_get_value_set_value_rewinds_training_fused_or_not():
    plain = _losses_after_set_value(fuse=False)
    assert _losses_after_set_value(fuse=True) == plain
    main, start, loss = _fc_momentum_program()
    with static.scope_guard(static.Scope()):
        static.Executor().run(start)
        losses = []
        for _ in range(5):
            losses.append(float(np.asarray(static.Executor().run(
                main, feed={"x": np.random.RandomState(1).rand(6, 4).astype("float32")}, fetch_list=[loss])[0])))
        assert losses[2:] == plain     # the rewound run repeats steps 3..5
        weight = main.all_parameters()[0]
        with pytest.raises(ValueError, match=r"expected a shape \[4, 8\]"):
            weight.set_value(np.zeros((8, 4), "float32"))
    with pytest.raises(ValueError, match="not in the scope"):
        weight.get_value(static.Scope())
