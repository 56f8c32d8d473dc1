"""A fetched column of one-element rows (shape [n, 1]) prints row by row as the 1.x book chapters
do (``"%.2f" % row``), which NumPy >= 2.4 refuses for plain arrays; arithmetic stays plain NumPy."""
import numpy as np
import pytest

import headrace.fluid as fluid
from headrace.core.fetched import ScalarArray, ScalarRows


def _fetch_column():
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    y = fluid.layers.reduce_sum(x, dim=1, keep_dim=True)
    exe = fluid.Executor(fluid.CPUPlace())
    data = np.arange(12, dtype="float32").reshape(4, 3)
    (col,) = exe.run(feed={"x": data}, fetch_list=[y])
    return col, data.sum(axis=1)


def test_rows_of_a_fetched_column_format_as_scalars():
    col, want = _fetch_column()
    assert isinstance(col, ScalarRows) and col.shape == (4, 1)
    assert ["%.1f" % v for v in col] == ["%.1f" % w for w in want]
    assert [f"{v:.0f}" for v in col] == [f"{w:.0f}" for w in want]
    assert float(col[2]) == want[2] and isinstance(col[2], ScalarArray)
    assert type(col[2, 0]) is np.float32


def test_column_arithmetic_is_plain_numpy_and_the_whole_column_is_no_scalar():
    col, want = _fetch_column()
    for result in (col * 2, col + col, np.argmax(col), np.concatenate([col, col])):
        assert not isinstance(result, (ScalarRows, ScalarArray)), type(result)
    assert np.argmax(col) == 3
    with pytest.raises(TypeError):
        float(col)
    assert type(np.asarray(col).view(np.ndarray)) is np.ndarray and repr(col).startswith("array(")
