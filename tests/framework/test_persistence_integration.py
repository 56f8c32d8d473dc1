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
