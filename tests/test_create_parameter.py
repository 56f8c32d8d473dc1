"""paddle.create_parameter (the reference's top-level name): a static Parameter with its initializer
in the startup program, or in dygraph mode an eager Parameter initialized at once."""
import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.core import context


def test_static_mode_creates_a_program_parameter():
    w = paddle.create_parameter(shape=[784, 200], dtype="float32")
    b = paddle.create_parameter(shape=[200], dtype="float32", is_bias=True)
    assert w.persistable and not b.stop_gradient
    assert [p.name for p in static.default_main_program().all_parameters()] == [w.name, b.name]
    exe = static.Executor(paddle.CPUPlace())
    exe.run(static.default_startup_program())
    value = np.array(static.global_scope().find_var(w.name).get_tensor())
    limit = np.sqrt(6.0 / (784 + 200))                       # Xavier uniform
    assert value.shape == (784, 200) and np.abs(value).max() <= limit and value.std() > 0.5 * limit / np.sqrt(3)
    assert not np.array(static.global_scope().find_var(b.name).get_tensor()).any()


def test_dygraph_mode_creates_an_initialized_eager_parameter():
    with context.static_mode_guard(False):
        w = paddle.create_parameter([3, 4], "float32", name="my_w",
                                    default_initializer=paddle.nn.initializer.Constant(0.5))
        assert isinstance(w, paddle.Tensor) and w.name == "my_w" and not w.stop_gradient
        np.testing.assert_array_equal(w.numpy(), np.full((3, 4), 0.5, np.float32))
        (w * 2.0).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0, np.float32))
