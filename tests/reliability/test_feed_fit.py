"""Issue 15 item 6: feeds that do not fit their variable are clear FeedErrors."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import FeedError


def _run(dtype, shape, value):
    x = static.data("v", shape, dtype)
    out = paddle.scale(paddle.cast(x, "float64"), scale=1.0)
    return static.Executor().run(feed={"v": value}, fetch_list=[out])[0]


@pytest.mark.parametrize("dtype,value,shape", [
    ("int32", [[3_000_000_000]], [None, 1]),
    ("int32", [[-3_000_000_000]], [None, 1]),
    ("int32", 3_000_000_000, []),
    ("int64", [[2 ** 63]], [None, 1]),
    ("int64", 2 ** 63, []),
    ("uint8", [[256]], [None, 1]),
    ("uint8", [[-1]], [None, 1]),
    ("float32", [[1e40]], [None, 1]),
    ("float32", -1e40, []),
    ("float16", [[70000]], [None, 1]),
])
def test_python_values_outside_the_dtype_are_refused(dtype, value, shape):
    with pytest.raises(FeedError, match=r"feed 'v'.*(range|overflow)"):
        _run(dtype, shape, value)


@pytest.mark.parametrize("dtype,value,expected", [
    ("int32", [[2 ** 31 - 1], [-2 ** 31]], [[2 ** 31 - 1], [-2 ** 31]]),
    ("int64", [[2 ** 63 - 1]], [[float(2 ** 63 - 1)]]),
    ("float32", [[np.inf], [np.nan], [3.4e38]], [[np.inf], [np.nan], [np.float32(3.4e38)]]),
])
def test_python_values_at_the_edges_still_fit(dtype, value, expected):
    np.testing.assert_array_equal(_run(dtype, [None, 1], value), np.array(expected, dtype="float64"))


def test_a_ragged_list_is_a_feed_error_naming_the_variable():
    with pytest.raises(FeedError, match=r"feed 'v'.*ragged"):
        _run("float32", [None, 2], [[1.0, 2.0], [3.0]])


def test_feeds_with_different_batch_sizes_are_reported_naming_both():
    x = static.data("x", [None, 4], "float32")
    y = static.data("label", [None, 1], "float32")
    loss = paddle.mean(paddle.square(static.nn.fc(x, size=1) - y))
    exe = static.Executor()
    exe.run(static.default_startup_program())
    with pytest.raises(FeedError, match=r"'x'.*8.*'label'.*6|'label'.*6.*'x'.*8") as info:
        exe.run(feed={"x": np.ones((8, 4), "float32"), "label": np.ones((6, 1), "float32")},
                fetch_list=[loss])
    assert "batch" in str(info.value)


def test_different_batch_sizes_in_data_parallel_are_reported_naming_both():
    x = static.data("x", [None, 4], "float32")
    y = static.data("label", [None, 1], "float32")
    loss = paddle.mean(paddle.square(static.nn.fc(x, size=1) - y))
    paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = static.Executor()
    exe.run(static.default_startup_program())
    prog = static.CompiledProgram(static.default_main_program()).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    with pytest.raises(FeedError, match=r"'x'.*'label'|'label'.*'x'"):
        exe.run(prog, feed={"x": np.ones((8, 4), "float32"), "label": np.ones((6, 1), "float32")},
                fetch_list=[loss])
