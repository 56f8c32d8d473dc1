import math

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.nn import initializer as init
from headrace.runtime import Executor, Scope


def _init_values(initializer, shape, dtype="float64", seed=None, global_seed=None):
    main, startup = static.Program(), static.Program()
    if seed is not None:
        startup.random_seed = seed
    with static.program_guard(main, startup):
        param = static.create_parameter(shape, dtype, attr=paddle.ParamAttr(name="p", initializer=initializer))
    if global_seed is not None:
        paddle.seed(global_seed)
    scope = Scope()
    Executor().run(startup, scope=scope)
    value = np.array(scope.find_var("p").get_tensor())
    assert value.shape == tuple(shape) and value.dtype == np.dtype(dtype)
    return value, param


def test_constant():
    value, _ = _init_values(init.Constant(0.25), [3, 4])
    np.testing.assert_array_equal(value, np.full((3, 4), 0.25))


def test_uniform_bounds_and_moments():
    value, _ = _init_values(init.Uniform(-0.5, 1.5), [200, 200])
    assert value.min() >= -0.5 and value.max() < 1.5
    n = value.size
    assert abs(value.mean() - 0.5) < 5 * (2 / math.sqrt(12)) / math.sqrt(n)
    assert abs(value.std() - 2 / math.sqrt(12)) < 0.01


def test_normal_and_fluid_names():
    value, _ = _init_values(fluid.initializer.NormalInitializer(loc=1.0, scale=2.0), [300, 300])
    assert abs(value.mean() - 1.0) < 5 * 2.0 / 300
    assert abs(value.std() - 2.0) < 0.02


def test_truncated_normal_stays_within_two_std():
    value, _ = _init_values(init.TruncatedNormal(0.0, 0.5), [200, 100])
    assert np.abs(value).max() <= 1.0
    # the truncated normal's std is 0.5 * 0.8796 (from the normal density on [-2, 2])
    assert abs(value.std() - 0.5 * 0.87962566) < 0.01


def test_xavier_uniform_and_normal_use_fans():
    value, _ = _init_values(init.Xavier(uniform=True), [300, 500])
    limit = math.sqrt(6.0 / 800)
    assert np.abs(value).max() <= limit and abs(value.std() - limit / math.sqrt(3)) < 0.002
    value, _ = _init_values(init.XavierNormal(), [300, 500])
    assert abs(value.std() - math.sqrt(2.0 / 800)) < 0.002


def test_msra_and_kaiming_use_fan_in_of_conv_filters():
    shape = [64, 16, 3, 3]  # fan_in = 16 * 9
    value, _ = _init_values(init.KaimingNormal(), shape)
    assert abs(value.std() - math.sqrt(2.0 / 144)) < 0.005
    value, _ = _init_values(fluid.initializer.MSRA(uniform=True), shape)
    assert np.abs(value).max() <= math.sqrt(6.0 / 144)


def test_assign_copies_values_and_checks_shape():
    data = np.arange(6, dtype="float64").reshape(2, 3)
    value, _ = _init_values(init.Assign(data), [2, 3])
    np.testing.assert_array_equal(value, data)
    with pytest.raises(ValueError, match="value has shape \\[3, 2\\], the parameter has shape \\[2, 3\\]"):
        _init_values(init.Assign(data.T), [2, 3])


def test_global_seed_makes_startup_reproducible():
    a, _ = _init_values(init.Normal(), [50], global_seed=11)
    b, _ = _init_values(init.Normal(), [50], global_seed=11)
    c, _ = _init_values(init.Normal(), [50], global_seed=12)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_program_random_seed_is_reproducible_and_independent_of_global_state():
    a, _ = _init_values(init.Uniform(), [50], seed=5, global_seed=1)
    b, _ = _init_values(init.Uniform(), [50], seed=5, global_seed=2)
    np.testing.assert_array_equal(a, b)


def test_two_parameters_of_one_program_get_different_values():
    main, startup = static.Program(), static.Program()
    startup.random_seed = 3
    with static.program_guard(main, startup):
        x = static.data("x", [None, 8], "float32")
        static.nn.fc(x, 8)
        static.nn.fc(x, 8)
    scope = Scope()
    Executor().run(startup, scope=scope)
    w0 = np.array(scope.find_var("fc_0.w_0").get_tensor())
    w1 = np.array(scope.find_var("fc_1.w_0").get_tensor())
    assert not np.array_equal(w0, w1)


def test_initializer_seed_fixes_the_draw():
    a, _ = _init_values(init.Normal(seed=42), [20], global_seed=1)
    b, _ = _init_values(init.Normal(seed=42), [20], global_seed=2)
    np.testing.assert_array_equal(a, b)


def test_param_attr_validation():
    with pytest.raises(TypeError, match="initializer must be an Initializer"):
        paddle.ParamAttr(initializer="zeros")
    with pytest.raises(ValueError, match="learning_rate must be a number >= 0"):
        paddle.ParamAttr(learning_rate=-1)
    with pytest.raises(ValueError, match="needs low < high"):
        init.Uniform(1.0, 0.0)
