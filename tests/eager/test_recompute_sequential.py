"""recompute_sequential({'segments': k, 'preserve_rng_state': ...}, functions, *args): the reference's
chunking (all but the last chunk recomputed), bit-identical results and gradients, errors."""
import numpy as np
import pytest

import headrace as paddle
from headrace.incubate.distributed.fleet import recompute_sequential

from .test_recompute import _saved_bytes


def _model():
    paddle.seed(0)
    return paddle.nn.Sequential(
        paddle.nn.Linear(12, 16), paddle.nn.ReLU(), paddle.nn.Dropout(0.4), paddle.nn.Linear(16, 16),
        paddle.nn.Tanh(), paddle.nn.Linear(16, 16), paddle.nn.Dropout(0.2), paddle.nn.Linear(16, 3))


def _run(segments):
    model = _model()
    x = paddle.to_tensor(np.random.default_rng(3).standard_normal((6, 12)).astype(np.float32),
                         stop_gradient=False)
    paddle.seed(7)
    out = model(x) if segments is None else recompute_sequential({"segments": segments}, model, x)
    kept = _saved_bytes(out)
    loss = (out * out).mean()
    loss.backward()
    return [out.numpy(), loss.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()], kept


@pytest.mark.parametrize("segments", [1, 2, 3, 4, 8])
def test_bit_identical_to_plain_run(segments):
    ref, kept_ref = _run(None)
    got, kept = _run(segments)
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    if segments == 1:
        assert kept == kept_ref            # one segment: nothing is recomputed
    else:
        assert kept < kept_ref             # the recomputed chunks keep no activations


def test_chunks_follow_the_reference():
    """8 functions, 3 segments: size 8 // 3 = 2, chunks [0, 1] and [2, 3] recomputed, [4..7] plain."""
    calls = []

    def tagged(i):
        def f(t):
            calls.append(i)
            return t * 2.0
        return f

    x = paddle.to_tensor(np.ones((2, 2), np.float32), stop_gradient=False)
    out = recompute_sequential({"segments": 3}, [tagged(i) for i in range(8)], x)
    assert calls == list(range(8))
    calls.clear()
    out.sum().backward()
    assert calls == [2, 3, 0, 1]           # backward recomputes the two chunks, last one first
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 256.0, np.float32))


def test_preserve_rng_state_false_still_runs():
    model = _model()
    x = paddle.rand([4, 12])
    out = recompute_sequential({"segments": 2, "preserve_rng_state": False}, model, x)
    assert out.shape == [4, 3]


@pytest.mark.parametrize("ctx, functions, error", [
    ({"segments": 0}, None, ValueError),
    ({"segments": 9}, None, ValueError),
    ({"segments": 2.0}, None, ValueError),
    ({"segments": 2, "offload": True}, None, ValueError),
    ([2], None, TypeError),
    ({"segments": 1}, "not layers", TypeError),
    ({"segments": 1}, [], ValueError),
])
def test_bad_arguments(ctx, functions, error):
    with pytest.raises(error, match="recompute_sequential"):
        recompute_sequential(ctx, _model() if functions is None else functions, paddle.rand([2, 12]))


def test_a_layer_that_is_not_a_sequential_is_refused():
    """Its forward is not a chain of its sublayers: running them in order would be silently wrong."""
    class Residual(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4)

        def forward(self, t):
            return t + self.b(paddle.tanh(self.a(t)))

    with pytest.raises(TypeError, match="Residual is a Layer but not a Sequential"):
        recompute_sequential({"segments": 1}, Residual(), paddle.rand([2, 4]))
    with pytest.raises(TypeError, match="must be a bool"):
        recompute_sequential({"segments": 1, "preserve_rng_state": "no"}, [paddle.tanh], paddle.rand([2, 4]))
    out = recompute_sequential({"segments": 1}, [paddle.nn.Linear(4, 4)], paddle.rand([2, 4]))   # a list works
    assert out.shape == [2, 4]
