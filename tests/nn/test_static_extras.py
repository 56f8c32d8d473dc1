"""paddle.static names of issue 16: Print, py_func, device_guard, InputSpec, ExponentialMovingAverage,
static.nn control flow (dygraph; static raises NotImplementedError)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.context import static_mode_guard
from headrace.core.errors import AttrError
from tests.ops.gradcheck import check_grad

rng = np.random.default_rng(5)


def _exe_run(main, feed, fetch, startup=None, scope=None):
    scope = scope or static.Scope()
    exe = static.Executor()
    if startup is not None:
        exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def test_print_prints_forward_and_backward_and_passes_values(capsys):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [2, 3], "float64")
        x.stop_gradient = False
        shown = static.Print(x, message="the input", summarize=4)
        once = static.Print(shown * 2.0, first_n=1, print_phase="forward")
        loss = paddle.sum(once)
        (dx,) = static.gradients([loss], [x])
    value = rng.standard_normal((2, 3))
    scope = static.Scope()
    for _ in range(2):
        out, grad = _exe_run(main, {"x": value}, [once, dx], scope=scope)
    np.testing.assert_array_equal(out, 2 * value)
    np.testing.assert_array_equal(grad, np.full((2, 3), 2.0))
    text = capsys.readouterr().out
    assert text.count("Variable: x\n") == 2 and "  - message: the input" in text
    assert "  - shape: [2, 3]" in text and "  - dtype: float64" in text
    assert "  - data: [" + " ".join(str(v) for v in value.ravel()[:4].tolist()) + "]" in text
    assert text.count("(gradient)") == 2          # Print(x) in both phases; once is forward only
    assert text.count("  - data:") == 2 + 2 + 1   # forward x twice, its gradient twice, `once` once


def test_print_gradient_and_eager(capsys):
    check_grad("print", {"In": rng.standard_normal((3, 2))}, {"first_n": 0})
    with static_mode_guard(False):
        t = paddle.to_tensor([1.0, 2.0])
        out = static.Print(t, print_tensor_type=False)
        np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])
    text = capsys.readouterr().out
    assert "  - data: [1.0 2.0]" in text and "dtype" not in text
    with pytest.raises(ValueError, match="print_phase"):
        static.Print(t, print_phase="never")


def test_py_func_forward_and_backward():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [2, 3], "float32")
        x.stop_gradient = False
        out = main.global_block().create_var(name="tanh_out", shape=[2, 3], dtype="float32")
        seen = []

        def backward(y, dy):             # x is skipped: the function sees out and its gradient
            seen.append(len((y, dy)))
            return np.asarray(dy) * (1 - np.square(np.asarray(y)))
        static.py_func(func=lambda v: np.tanh(v), x=x, out=out, backward_func=backward,
                       skip_vars_in_backward_input=x)
        loss = paddle.sum(out * out)
        (dx,) = static.gradients([loss], [x])
    value = rng.standard_normal((2, 3)).astype("float32")
    got, grad = _exe_run(main, {"x": value}, [out, dx])
    np.testing.assert_allclose(got, np.tanh(value), rtol=1e-6)
    np.testing.assert_allclose(grad, 2 * np.tanh(value) * (1 - np.tanh(value) ** 2), rtol=1e-5)
    assert seen == [2]


def test_py_func_without_backward_and_errors():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2], "float32")
        x.stop_gradient = False
        out = main.global_block().create_var(name="o", shape=[2], dtype="float32")
        static.nn.py_func(func=lambda v: v * 3, x=x, out=out)
        assert paddle.grad([paddle.sum(out)], [x]) == [None]       # no gradient op: nothing flows
        other = static.data("other", [2], "float32")
        with pytest.raises(ValueError, match="neither in x nor in out"):
            static.py_func(func=lambda v: v, x=x, out=out, backward_func=lambda *a: a,
                           skip_vars_in_backward_input=other)
    (got,) = _exe_run(main, {"x": np.array([1.0, 2.0], "float32"), "other": np.zeros(2, "float32")}, [out])
    np.testing.assert_array_equal(got, [3.0, 6.0])
    wrong = static.Program()
    with static.program_guard(wrong, static.Program()):
        x = static.data("x", [2], "float32")
        bad = wrong.global_block().create_var(name="bad", shape=[3], dtype="float32")
        static.py_func(func=lambda v: v, x=x, out=bad)
    with pytest.raises(ValueError, match="shape \\[2\\], expected \\[3\\]"):
        _exe_run(wrong, {"x": np.array([1.0, 2.0], "float32")}, [bad])
    with static_mode_guard(False), pytest.raises(RuntimeError, match="dygraph"):
        static.py_func(lambda v: v, None, None)


def test_device_guard_records_the_device():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2], "float32")
        with static.device_guard("cpu"):
            a = x * 2.0
        with static.device_guard("gpu:0"):
            b = a + 1.0
        c = b * 3.0
        with pytest.raises(ValueError, match="device id for cpu"):
            with static.device_guard("cpu:0"):
                pass
        with pytest.raises(ValueError, match="But received tpu"):
            with static.device_guard("tpu"):
                pass
    devices = {op.outputs["Out"][0]: op.attrs.get("op_device", "") for op in main.global_block().ops}
    assert devices[a.name] == "cpu" and devices[b.name] == "gpu:0" and devices[c.name] == ""
    (got,) = _exe_run(main, {"x": np.array([1.0, 2.0], "float32")}, [c])
    np.testing.assert_array_equal(got, [9.0, 15.0])


def test_input_spec():
    spec = static.InputSpec([None, 784], "float32", "x")
    assert spec.shape == (-1, 784) and spec.dtype == paddle.float32 and spec.name == "x"
    assert repr(spec) == "InputSpec(shape=(-1, 784), dtype=float32, name=x, stop_gradient=False)"
    assert spec.batch(16).shape == (16, -1, 784) and spec.unbatch().shape == (-1, 784)
    assert static.InputSpec.from_numpy(np.ones((2, 3), "int64"), "y") == static.InputSpec((2, 3), "int64", "y")
    with static_mode_guard(False):
        t = paddle.to_tensor(np.ones((4, 5), "float32"))
        assert static.InputSpec.from_tensor(t, name="t").shape == (4, 5)
    assert hash(spec) == hash(static.InputSpec((-1, 784), "float32", "other"))
    with pytest.raises(ValueError, match="dim"):
        static.InputSpec([2, "a"])
    with pytest.raises(ValueError, match="unbatch"):
        static.InputSpec([]).unbatch()
    main = static.Program()
    with static.program_guard(main, static.Program()):
        var = spec._create_feed_layer()
        assert var.name == "x" and tuple(var.shape) == (-1, 784)


def _ema_net(thres=False):
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 3
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 2], "float32")
        y = static.nn.fc(x, size=1, weight_attr=paddle.ParamAttr(name="w"), bias_attr=paddle.ParamAttr(name="b"))
        loss = paddle.mean(y)
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
        steps = static.create_global_var([1], 3, "int64", persistable=True, name="steps") if thres else None
        ema = static.ExponentialMovingAverage(0.9, thres_steps=steps)
        ema.update()
    return main, startup, loss, ema


@pytest.mark.parametrize("thres", [False, True])
def test_exponential_moving_average(thres):
    main, startup, loss, ema = _ema_net(thres)
    decay = min(0.9, (3 + 1) / (3 + 10)) if thres else 0.9
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    shadow = {n: np.zeros_like(np.array(scope._get_array(n))) for n in ("w", "b")}
    feed = {"x": rng.standard_normal((4, 2)).astype("float32")}
    for _ in range(3):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        for n in shadow:      # the average reads the parameter after this step's update
            shadow[n] = shadow[n] * np.float32(decay) + np.array(scope._get_array(n)) * np.float32(1 - decay)
    trained = {n: np.array(scope._get_array(n)) for n in shadow}
    with static.scope_guard(scope):
        with ema.apply(exe):
            for n in shadow:
                np.testing.assert_allclose(np.array(scope._get_array(n)), shadow[n] / (1 - decay ** 3), rtol=1e-5)
        for n in shadow:
            np.testing.assert_array_equal(np.array(scope._get_array(n)), trained[n])
        with ema.apply(exe, need_restore=False):
            pass
        assert not np.array_equal(np.array(scope._get_array("w")), trained["w"])
        ema.restore(exe)
        np.testing.assert_array_equal(np.array(scope._get_array("w")), trained["w"])


def test_ema_before_any_update_applies_the_plain_average():
    main, startup, loss, ema = _ema_net()
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    with static.scope_guard(scope), ema.apply(exe):
        np.testing.assert_array_equal(np.array(scope._get_array("w")), 0.0)   # ema / 1, no division by 0


def test_control_flow_in_dygraph_and_static():
    with static_mode_guard(False):
        one, two = paddle.to_tensor([1.0]), paddle.to_tensor([2.0])
        assert static.nn.cond(paddle.to_tensor(True), lambda: one, lambda: two) is one
        assert static.nn.cond(paddle.to_tensor([False]), lambda: one) is None
        assert static.nn.case([(paddle.to_tensor(False), lambda: 1), (paddle.to_tensor(True), lambda: 2)]) == 2
        assert static.nn.case([(paddle.to_tensor(False), lambda: 1)], default=lambda: 3) == 3
        assert static.nn.case([(paddle.to_tensor(False), lambda: 1), (paddle.to_tensor(False), lambda: 5)]) == 5
        idx = paddle.to_tensor(1)
        assert static.nn.switch_case(idx, {0: lambda: "a", 1: lambda: "b"}) == "b"
        assert static.nn.switch_case(paddle.to_tensor(7), [lambda: "a", lambda: "b"]) == "b"
        assert static.nn.switch_case(paddle.to_tensor(7), [(0, lambda: "a")], default=lambda: "d") == "d"
        i, total = static.nn.while_loop(lambda i, s: i < 4, lambda i, s: [i + 1, s + i],
                                        [paddle.to_tensor(0), paddle.to_tensor(0)])
        assert int(i.numpy()) == 4 and int(total.numpy()) == 6
        with pytest.raises(ValueError, match="one element"):
            static.nn.cond(paddle.to_tensor([True, False]), lambda: 1)
    with pytest.raises(NotImplementedError, match="not supported by headrace yet"):
        static.nn.cond(True, lambda: 1, lambda: 2)
    with pytest.raises(NotImplementedError, match="while_loop"):
        static.nn.while_loop(lambda i: i < 1, lambda i: [i], [1])


def test_print_rejects_unknown_phase_at_build():
    from tests.ops.harness import check_build_error

    check_build_error("print", {"In": np.ones(2)}, {"print_phase": "sometimes"}, AttrError)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_weight_norm_param_attr(dim):
    from tests.ops.gradcheck import check_program_grad

    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 3], "float64")
        y = static.nn.fc(x, size=2, weight_attr=static.WeightNormParamAttr(dim=dim, name="wn"),
                         bias_attr=False)
    names = sorted(p.name for p in main.all_parameters())
    assert names == ["wn_g", "wn_v"]
    g_shape = [1] if dim is None else [[3, 2][dim]]
    assert list(main.global_block().var("wn_g").shape) == g_shape
    feed = {"x": rng.standard_normal((4, 3))}
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    v = np.array(scope._get_array("wn_v"))
    (out,) = exe.run(main, feed=feed, fetch_list=[y], scope=scope)
    np.testing.assert_allclose(out, feed["x"] @ v, rtol=1e-12)        # g starts at ||v||: w = v
    g = rng.uniform(0.5, 2.0, g_shape)
    scope._set_array("wn_g", g)
    axes = None if dim is None else tuple(a for a in range(2) if a != dim)
    norm = np.sqrt(np.sum(v * v, axis=axes, keepdims=True))
    w = (g.reshape(-1, 1) if dim == 0 else g) * v / norm
    (out,) = exe.run(main, feed=feed, fetch_list=[y], scope=scope)
    np.testing.assert_allclose(out, feed["x"] @ w, rtol=1e-12)

    def build():
        h = static.nn.fc(static.data("x", [-1, 3], "float64"), size=2, bias_attr=False,
                         weight_attr=static.WeightNormParamAttr(dim=dim, name="wn"))
        return paddle.sum(h * h)
    check_program_grad(build, feed, ["wn_v", "wn_g"])
    with pytest.raises(AttrError, match="dim"):
        static.WeightNormParamAttr(dim=1.5)
    with static_mode_guard(False), pytest.raises(RuntimeError, match="static programs"):
        paddle.nn.Linear(3, 2, weight_attr=static.WeightNormParamAttr())
