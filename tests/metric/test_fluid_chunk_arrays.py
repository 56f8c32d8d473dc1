"""fluid.metrics.ChunkEvaluator fed the [1]-shaped arrays that fetching chunk_eval gives (review)."""
import numpy as np
import pytest

import headrace.fluid as fluid


def test_chunk_evaluator_accepts_fetched_count_arrays():
    chunks = fluid.metrics.ChunkEvaluator()
    chunks.update(np.array([4], "int64"), np.array([5], "int64"), np.array([3], "int64"))
    chunks.update(np.array([1], "int64"), np.array([1], "int64"), np.array([1], "int64"))
    p, r, f1 = chunks.eval()     # float() of a [1] array raised TypeError under NumPy 2
    assert (p, r) == (4 / 5, 4 / 6) and f1 == pytest.approx(2 * p * r / (p + r))
