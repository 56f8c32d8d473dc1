"""Eager dispatch checks an op once per signature (op, attributes as given, input shapes and
dtypes) and reuses the result; errors stay the same on every call and are never cached."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.eager import runner


def test_repeated_calls_reuse_one_checked_signature():
    runner._CHECKED.clear()
    a, b = paddle.to_tensor(np.ones((2, 3), "float32")), paddle.to_tensor(np.ones((3, 4), "float32"))
    for _ in range(3):
        out = paddle.matmul(a, b)
    assert len(runner._CHECKED) == 1 and out.shape == [2, 4]
    paddle.matmul(a, b, transpose_x=False, transpose_y=False)    # the same attributes: the same entry
    assert len(runner._CHECKED) == 1
    paddle.matmul(paddle.to_tensor(np.ones((5, 3), "float32")), b)   # another shape: a new entry
    assert len(runner._CHECKED) == 2


def test_a_failing_call_raises_the_same_error_every_time_and_is_not_cached():
    runner._CHECKED.clear()
    a, b = paddle.to_tensor(np.ones((2, 3), "float32")), paddle.to_tensor(np.ones((4, 5), "float32"))
    messages = []
    for _ in range(2):
        with pytest.raises(ShapeError) as info:
            paddle.matmul(a, b)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "test_dispatch_cache.py" in messages[0]
    assert not runner._CHECKED
    with pytest.raises(DTypeError):
        paddle.matmul(a, paddle.to_tensor(np.ones((3, 4), "float64")))


def test_an_attribute_of_another_type_is_checked_again():
    """True and 1 hash alike; the signature keeps their types apart, so a bad value is not
    excused by an earlier good one."""
    runner._CHECKED.clear()
    x = paddle.to_tensor(np.ones((2, 3), "float32"))
    runner.run_op("softmax", {"X": x}, {"axis": 1})
    with pytest.raises(AttrError):
        runner.run_op("softmax", {"X": x}, {"axis": 5})
    assert len(runner._CHECKED) == 1


def test_the_cache_is_bounded(monkeypatch):
    runner._CHECKED.clear()
    monkeypatch.setattr(runner, "_CHECKED_MAX", 4)
    for n in range(1, 11):
        paddle.tanh(paddle.to_tensor(np.ones((n,), "float32")))
        assert len(runner._CHECKED) <= 4


def _plans():
    """Record plans of every cached signature (each signature's entry keeps its own)."""
    return sum(len(plans) for _, _, plans in runner._CHECKED.values())


def test_nodes_of_one_signature_share_prepared_gradient_ops_but_not_their_lines():
    runner._CHECKED.clear()
    w = paddle.to_tensor(np.ones((3, 2), "float32"), stop_gradient=False)
    x = paddle.to_tensor(np.ones((4, 3), "float32"))
    a = paddle.matmul(x, w)
    b = paddle.matmul(x, w)
    assert a._node.grad_ops is b._node.grad_ops and _plans() == 1
    assert a._node.callsite != b._node.callsite          # each node names its own line
    x.stop_gradient = False
    c = paddle.matmul(x, w)                              # X needs a gradient too: another plan
    assert _plans() == 2 and c._node.grad_ops is not a._node.grad_ops
    (a.sum() + c.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 2), 8.0))
    np.testing.assert_allclose(x.grad.numpy(), np.full((4, 3), 2.0))
