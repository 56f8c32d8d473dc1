"""softmax_with_cross_entropy with hard labels picks -log softmax[label] without forming
log_softmax everywhere: the same bits as the general path (log_softmax, then the pick)."""
import numpy as np
import pytest

from headrace.ops import loss as loss_ops
from headrace.ops.kernel import context
from headrace.ops.registry import lookup


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_hard_label_fast_path_is_bit_identical_to_the_general_path(dtype, axis):
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal((6, 7)) * 5).astype(dtype)
    shape = [6, 7]
    shape[axis] = 1
    label = rng.integers(0, logits.shape[axis], shape).astype(np.int64)
    label.flat[2] = -100                                              # ignored
    attrs = {**lookup("softmax_with_cross_entropy").attrs, "axis": axis}
    got = lookup("softmax_with_cross_entropy").kernel({"Logits": logits, "Label": label}, attrs, context())
    probs, log_p = loss_ops._log_softmax(logits, axis % 2)
    want = loss_ops._nll(log_p, label, axis % 2, False, -100)
    np.testing.assert_array_equal(got["Softmax"], probs)
    np.testing.assert_array_equal(got["Loss"], want.astype(dtype))
    assert got["Loss"].flat[2] == 0
