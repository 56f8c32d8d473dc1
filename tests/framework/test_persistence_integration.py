"""Persistence meeting the other features: fetched values, fused optimizer buffers, LR schedules."""
import pickle

import numpy as np

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
