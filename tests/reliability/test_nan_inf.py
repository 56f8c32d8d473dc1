"""Issue 15 item 4: FLAGS_check_nan_inf checks every op's outputs, in static and eager mode."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import NonFiniteError, NonFiniteWarning


@pytest.fixture
def nan_check():
    old = paddle.get_flags(["FLAGS_check_nan_inf", "FLAGS_check_nan_inf_level"])
    paddle.set_flags({"FLAGS_check_nan_inf": True})
    yield
    paddle.set_flags(old)


def _train_net():
    x = static.data("x", [None, 4], "float32")
    hidden = static.nn.fc(x, size=3)    # line that builds the first op reading x
    loss = paddle.mean(hidden)
    paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = static.Executor()
    exe.run(static.default_startup_program())
    return exe, loss, hidden


def test_flags_api_round_trips_and_refuses_unknown_names():
    old = paddle.get_flags(["FLAGS_check_nan_inf", "FLAGS_check_nan_inf_level"])
    assert old == {"FLAGS_check_nan_inf": False, "FLAGS_check_nan_inf_level": 0}
    try:
        paddle.set_flags({"FLAGS_check_nan_inf": True, "FLAGS_check_nan_inf_level": 1})
        assert paddle.get_flags("FLAGS_check_nan_inf") == {"FLAGS_check_nan_inf": True}
        assert paddle.get_flags(["FLAGS_check_nan_inf_level"]) == {"FLAGS_check_nan_inf_level": 1}
    finally:
        paddle.set_flags(old)
    with pytest.raises(ValueError, match="unknown flag 'FLAGS_no_such'"):
        paddle.set_flags({"FLAGS_no_such": 1})
    with pytest.raises(ValueError, match="unknown flag"):
        paddle.get_flags("FLAGS_no_such")
    with pytest.raises(ValueError, match="level 2 is not supported"):
        paddle.set_flags({"FLAGS_check_nan_inf_level": 2})
    assert paddle.get_flags("FLAGS_check_nan_inf_level") == {"FLAGS_check_nan_inf_level": 0}


def test_a_nan_in_a_feed_is_reported_at_the_first_op_naming_its_input(nan_check):
    exe, loss, hidden = _train_net()
    x = np.ones((2, 4), "float32")
    x[1, 2] = np.nan
    params = {p.name: np.array(static.global_scope()._get_array(p.name))
              for p in static.default_main_program().all_parameters()}
    with pytest.raises(NonFiniteError) as info:
        exe.run(feed={"x": x}, fetch_list=[loss])
    message = str(info.value)
    assert "op `mul`" in message and "test_nan_inf.py:26" in message
    assert "output `Out` (fc_0.tmp_0)" in message and "3 NaN" in message  # a row of the product
    assert "inputs were already non-finite: `X` (x) has 1 NaN and 0 Inf of 8 values" in message
    for name, value in params.items():      # nothing was updated with the NaN
        np.testing.assert_array_equal(static.global_scope()._get_array(name), value)


def test_without_the_flag_a_nan_spreads_silently():
    exe, loss, hidden = _train_net()
    x = np.ones((2, 4), "float32")
    x[1, 2] = np.nan
    exe.run(feed={"x": x}, fetch_list=[loss])
    w = static.default_main_program().all_parameters()[0]
    assert np.isnan(static.global_scope()._get_array(w.name)).any()


def test_an_op_making_an_inf_from_finite_inputs_says_so(nan_check):
    x = static.data("x", [None, 2], "float32")
    y = paddle.log(x)
    with pytest.raises(NonFiniteError, match=r"op `log` \(built at .*test_nan_inf.py:\d+\): output `Out` "
                                             r"\(log_0.tmp_0\) has 0 NaN and 1 Inf of 2 values; its inputs "
                                             r"were all finite"):
        static.Executor().run(feed={"x": np.array([[1.0, 0.0]], "float32")}, fetch_list=[y])


def test_gradient_ops_are_checked_too(nan_check):
    x = static.data("x", [None, 2], "float32")
    x.stop_gradient = False
    loss = paddle.mean(paddle.sqrt(x))
    static.append_backward(loss)
    with pytest.raises(NonFiniteError, match="op `sqrt_grad`.*its inputs were all finite"):
        static.Executor().run(feed={"x": np.array([[1.0, 0.0]], "float32")},
                              fetch_list=[x.name + "@GRAD"])


def test_eager_mode_is_checked(nan_check):
    paddle.disable_static()
    try:
        t = paddle.to_tensor(np.array([1.0, -1.0], "float32"))
        with pytest.raises(NonFiniteError, match=r"op `sqrt` \(built at .*test_nan_inf.py:\d+\): output "
                                                 r"`Out` has 1 NaN"):
            paddle.sqrt(t)
    finally:
        paddle.enable_static()


def test_level_one_only_warns(nan_check):
    paddle.set_flags({"FLAGS_check_nan_inf_level": 1})
    x = static.data("x", [None, 2], "float32")
    y = paddle.scale(paddle.log(x), scale=2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, = static.Executor().run(feed={"x": np.array([[1.0, 0.0]], "float32")}, fetch_list=[y])
    assert out[0, 1] == -np.inf
    found = [str(w.message) for w in caught if issubclass(w.category, NonFiniteWarning)]
    assert len(found) == 2 and "op `log`" in found[0] and "op `scale`" in found[1]
    assert "inputs were already non-finite" in found[1]


def test_data_parallel_is_checked(nan_check):
    exe, loss, _ = _train_net()
    prog = static.CompiledProgram(static.default_main_program()).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    x = np.ones((4, 4), "float32")
    x[3, 0] = np.inf
    with pytest.raises(NonFiniteError, match="on place 1 of 2: .*op `mul`"):
        exe.run(prog, feed={"x": x}, fetch_list=[loss])


def test_the_environment_variable_turns_the_check_on(tmp_path):
    script = tmp_path / "nan_env.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import headrace as paddle
        import headrace.static as static
        from headrace.core.errors import NonFiniteError
        print(paddle.get_flags(["FLAGS_check_nan_inf", "FLAGS_check_nan_inf_level"]))
        paddle.enable_static()
        x = static.data("x", [None, 2], "float32")
        y = paddle.log(x)
        try:
            static.Executor().run(feed={"x": np.array([[1.0, 0.0]], "float32")}, fetch_list=[y])
        except NonFiniteError as exc:
            print("raised:", exc)
        paddle.disable_static()
        try:
            paddle.log(paddle.to_tensor(np.array([0.0], "float32")))
        except NonFiniteError as exc:
            print("eager raised:", exc)
    """))
    env = dict(os.environ, FLAGS_check_nan_inf="1")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "{'FLAGS_check_nan_inf': True, 'FLAGS_check_nan_inf_level': 0}" in out
    assert "raised: FLAGS_check_nan_inf: op `log` (built at " in out and "nan_env.py:9)" in out
    assert "eager raised: FLAGS_check_nan_inf: op `log`" in out


def test_eager_gradient_ops_are_checked(nan_check):
    paddle.disable_static()
    try:
        x = paddle.to_tensor(np.array([1.0, 0.0], "float32"), stop_gradient=False)
        loss = paddle.mean(paddle.sqrt(x))
        with pytest.raises(NonFiniteError, match=r"op `sqrt_grad` .*\(the gradient of `sqrt`\): output `X@GRAD`"
                                                 r".* its inputs were all finite"):
            loss.backward()
    finally:
        paddle.enable_static()
