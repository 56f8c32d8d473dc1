"""Any nest of dicts, lists, tuples, numbers, strings, bytes, None and arrays survives
paddle.save -> paddle.load exactly (types, dtypes, shapes, values, key order)."""
import io
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import headrace as paddle

DTYPES = st.sampled_from(["float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool"])
ARRAYS = DTYPES.flatmap(lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
           | st.text(max_size=8) | st.binary(max_size=8))
KEYS = st.text(max_size=6) | st.integers(-5, 5)
TREES = st.recursive(SCALARS | ARRAYS, lambda inner: (
    st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)


def _equal(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _equal(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _equal(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


@given(TREES)
def test_save_load_round_trip(tree):
    buffer = io.BytesIO()
    paddle.save(tree, buffer)
    buffer.seek(0)
    _equal(tree, paddle.load(buffer, return_numpy=True))
