import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.errors import DeviceError, FeedError, FetchError, KernelError, ShapeError, UninitializedError
from headrace.runtime import Executor, Scope


def _net():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        w = static.create_parameter([3], "float32", attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Constant(2.0)))
        y = paddle.multiply(x, w)
        z = paddle.add(y, x)
    return main, startup, x, y, z


def test_run_fetch_by_variable_and_by_name():
    main, startup, x, y, z = _net()
    exe, scope = Executor(static.CPUPlace()), Scope()
    exe.run(startup, scope=scope)
    feed = np.arange(6, dtype="float32").reshape(2, 3)
    got_y, got_z = exe.run(main, feed={"x": feed}, fetch_list=[y, z.name], scope=scope)
    np.testing.assert_array_equal(got_y, feed * 2)
    np.testing.assert_array_equal(got_z, feed * 3)
    np.testing.assert_array_equal(np.array(scope.find_var("w").get_tensor()), [2, 2, 2])


def test_default_programs_and_global_scope():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    w = fluid.layers.create_parameter([3], "float32", name="w",
                                      default_initializer=fluid.initializer.Constant(0.5))
    y = fluid.layers.elementwise_mul(x, w)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    out = exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])[0]
    np.testing.assert_array_equal(out, np.full((2, 3), 0.5, "float32"))
    tensor = fluid.global_scope().find_var("w").get_tensor()
    tensor.set(np.full(3, 4.0, "float32"), fluid.CPUPlace())
    out = exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])[0]
    np.testing.assert_array_equal(out, np.full((2, 3), 4.0, "float32"))


def test_scope_guard_and_return_numpy_false():
    main, startup, x, y, z = _net()
    exe, scope = Executor(), Scope()
    with static.scope_guard(scope):
        exe.run(startup)
        out = exe.run(main, feed={"x": np.ones((1, 3), "float32")}, fetch_list=[z], return_numpy=False)[0]
    assert static.global_scope() is not scope
    assert scope.find_var("w") is not None
    assert out.shape() == [1, 3] and np.array(out).tolist() == [[3, 3, 3]]


def test_unknown_feed_name_lists_the_data_variables():
    main, startup, *_ = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(FeedError, match=r"'xx' is not a variable of this program; its data variables are \['x'\]"):
        exe.run(main, feed={"x": np.ones((1, 3), "float32"), "xx": np.ones(1)}, scope=scope)


def test_feed_of_wrong_dtype_or_shape():
    main, startup, *_ = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(FeedError, match="expected dtype float32, got float64"):
        exe.run(main, feed={"x": np.ones((1, 3))}, scope=scope)
    with pytest.raises(FeedError, match=r"expected shape \[-1, 3\], got \[2, 4\]"):
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, scope=scope)
    with pytest.raises(FeedError, match=r"expected shape \[-1, 3\], got \[3\]"):
        exe.run(main, feed={"x": np.ones(3, "float32")}, scope=scope)
    # plain Python numbers are converted; floats into an int variable are refused
    out = exe.run(main, feed={"x": [[1, 2, 3]]}, fetch_list=["x"], scope=scope)[0]
    assert out.dtype == np.float32


def test_missing_feed_names_the_reading_op_and_line():
    main, startup, *_ = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(FeedError) as info:
        exe.run(main, feed={}, scope=scope)
    assert "data variable 'x' is read but was neither fed" in str(info.value)
    assert "op `elementwise_mul`" in str(info.value) and "test_executor.py" in str(info.value)


def test_feeding_a_computed_variable_is_refused():
    main, startup, x, y, z = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(FeedError, match="is computed by op `elementwise_mul`"):
        exe.run(main, feed={"x": np.ones((1, 3), "float32"), y.name: np.ones((1, 3), "float32")}, scope=scope)


def test_persistable_variables_can_be_fed():
    main, startup, x, y, z = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    out = exe.run(main, feed={"x": np.ones((1, 3), "float32"), "w": np.full(3, 5.0, "float32")},
                  fetch_list=[y], scope=scope)[0]
    np.testing.assert_array_equal(out, [[5, 5, 5]])
    np.testing.assert_array_equal(np.array(scope.find_var("w").get_tensor()), [5, 5, 5])


def test_uninitialized_parameter_says_run_startup():
    main, *_ = _net()
    with pytest.raises(UninitializedError, match="run the startup program first"):
        Executor().run(main, feed={"x": np.ones((1, 3), "float32")}, scope=Scope())


def test_fetch_errors():
    main, startup, x, y, z = _net()
    other, _, _, other_y, _ = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((1, 3), "float32")}
    with pytest.raises(FetchError, match="belongs to another program"):
        exe.run(main, feed=feed, fetch_list=[other_y], scope=scope)
    with pytest.raises(FetchError, match="no variable of that name"):
        exe.run(main, feed=feed, fetch_list=["nope"], scope=scope)
    dangling = main.global_block().create_var(name="dangling", shape=[1], dtype="float32")
    with pytest.raises(FetchError, match="no op of this program computes it"):
        exe.run(main, feed=feed, fetch_list=[dangling], scope=scope)


def test_fetch_main_variables_from_its_test_clone():
    """The common idiom: build, clone(for_test=True), minimize; run the clone fetching main's vars."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 3], "float32")
        out = paddle.mean(static.nn.fc(x, size=2))
        test_program = main.clone(for_test=True)
        paddle.optimizer.SGD(0.1).minimize(out)
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 3), "float32")}
    (value,) = exe.run(test_program, feed=feed, fetch_list=[out], scope=scope)
    (again,) = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    assert value == again  # the clone ran the same forward with the same (not yet updated) weights
    grad = main.global_block().var("fc_0.w_0@GRAD")
    with pytest.raises(FetchError, match="clone without it"):
        exe.run(test_program, feed=feed, fetch_list=[grad], scope=scope)


def test_kernel_failure_names_the_op_and_line():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        a = static.data("a", [None, 3], "float32")
        b = static.data("b", [None, 3], "float32")
        c = paddle.add(a, b)  # batch sizes disagree at run time
    with pytest.raises(FeedError, match="'a' \\(batch 2\\) and 'b' \\(batch 4\\)") as info:
        Executor().run(main, feed={"a": np.ones((2, 3), "float32"), "b": np.ones((4, 3), "float32")},
                       fetch_list=[c], scope=Scope())
    message = str(info.value)
    assert "op `elementwise_add`" in message and "test_executor.py" in message
    assert "X=a[-1, 3]" in message
    assert isinstance(info.value.__cause__, KernelError)


def test_gpu_place_is_a_clear_error():
    place = static.CUDAPlace(0)
    assert place.get_device_id() == 0
    with pytest.raises(DeviceError, match="no GPU support"):
        Executor(place).run(static.Program())
    with pytest.raises(DeviceError):
        static.cuda_places()


def test_cpu_places_honours_cpu_num(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(static.cpu_places()) == 3
    assert len(static.cpu_places(2)) == 2
    monkeypatch.setenv("CPU_NUM", "zero")
    with pytest.raises(ValueError, match="CPU_NUM must be a positive integer"):
        static.cpu_places()


def test_plans_are_cached_per_program_version():
    main, startup, x, y, z = _net()
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((1, 3), "float32")}
    exe.run(main, feed=feed, fetch_list=[z], scope=scope)
    plan = exe._plan(main, ("x",), (z.name,))
    exe.run(main, feed=feed, fetch_list=[z], scope=scope)
    assert exe._plan(main, ("x",), (z.name,)) is plan
    with static.program_guard(main, startup):
        z2 = z * 2.0
    out = exe.run(main, feed=feed, fetch_list=[z2], scope=scope)[0]
    np.testing.assert_array_equal(out, [[6, 6, 6]])
    assert exe._plan(main, ("x",), (z.name,)) is not plan


def test_ops_run_in_program_order_with_rewrites():
    """A variable written twice: readers see the value current at their position."""
    main = static.Program()
    block = main.global_block()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2], "float32")
        y = x * 2.0
        first = y * 1.0
        block.append_op("scale", {"X": y}, {"Out": y}, {"scale": 10.0})
        second = y * 1.0
    a, b = Executor().run(main, feed={"x": np.ones(2, "float32")}, fetch_list=[first, second], scope=Scope())
    np.testing.assert_array_equal(a, [2, 2])
    np.testing.assert_array_equal(b, [20, 20])


def test_fetching_a_parameter_no_op_reads():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        w = static.create_parameter([2], "float32", attr=paddle.ParamAttr(
            name="lonely", initializer=paddle.nn.initializer.Constant(3.0)))
    exe, scope = Executor(), Scope()
    with pytest.raises(UninitializedError, match="cannot fetch 'lonely'"):
        exe.run(main, fetch_list=[w], scope=scope)
    exe.run(startup, scope=scope)
    got = exe.run(main, fetch_list=[w], scope=scope)[0]
    np.testing.assert_array_equal(got, [3, 3])
    got[0] = 7  # the fetched value is a copy
    np.testing.assert_array_equal(np.array(scope.find_var("lonely").get_tensor()), [3, 3])


def test_check_mode_rejects_an_undeclared_view():
    """A kernel returning a view of its input must declare it in OpDef.views (check mode)."""
    from headrace.ops.apply import apply_op_single
    from headrace.ops.registry import register

    for name, views in (("test_sneaky_view", None), ("test_declared_view", {"Out": "X"})):
        register(name, inputs=["X"], outputs=["Out"], views=views,
                 infer=lambda ctx: ctx.set("Out", ctx.shape("X"), ctx.dtype("X")),
                 kernel=lambda ins, attrs, ctx: {"Out": ins["X"][:]})

    def run(op):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [3], "float32")
            out = apply_op_single(op, {"X": x})
        return Executor().run(main, feed={"x": np.ones(3, "float32")}, fetch_list=[out], scope=Scope())

    with pytest.raises(KernelError, match="shares memory with input `X`.*views"):
        run("test_sneaky_view")
    np.testing.assert_array_equal(run("test_declared_view")[0], np.ones(3))


def test_check_mode_rejects_an_output_that_keeps_a_larger_array_alive():
    """A fresh output owns exactly its bytes (what memory estimates rely on): a slice of a
    bigger temporary is refused in check mode, a copy of it is fine."""
    from headrace.ops.apply import apply_op_single
    from headrace.ops.registry import register

    for name, make in (("test_slice_of_temp", lambda x: np.concatenate([x, x])[:3]),
                       ("test_copy_of_temp", lambda x: np.concatenate([x, x])[:3].copy())):
        register(name, inputs=["X"], outputs=["Out"],
                 infer=lambda ctx: ctx.set("Out", ctx.shape("X"), ctx.dtype("X")),
                 kernel=lambda ins, attrs, ctx, make=make: {"Out": make(ins["X"])})

    def run(op):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [3], "float32")
            out = apply_op_single(op, {"X": x})
        return Executor().run(main, feed={"x": np.ones(3, "float32")}, fetch_list=[out], scope=Scope())

    with pytest.raises(KernelError, match=r"\(12 bytes\) is a view of a larger array of its own \(24 bytes\)"):
        run("test_slice_of_temp")
    np.testing.assert_array_equal(run("test_copy_of_temp")[0], np.ones(3))


def test_create_global_var_checks_shape_and_is_initialised_by_startup():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        with pytest.raises(ShapeError, match=r"\[-1\]"):
            static.create_global_var([-1], 1.0, "float32")
        lr = static.create_global_var([1], 0.25, "float32", name="lr")
    assert lr.persistable and lr.stop_gradient
    scope = Scope()
    Executor().run(startup, scope=scope)
    np.testing.assert_array_equal(scope.find_var("lr").get_tensor(), [0.25])
