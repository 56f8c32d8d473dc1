"""The tape's gradients against float64 central differences, on a function that reuses a tensor,
broadcasts, reshapes, slices, and mixes ops (so accumulation and zero-fill are exercised)."""
import numpy as np

import headrace as paddle
import headrace.nn.functional as F


def _f(x, w, b):
    h = F.tanh(x @ w + b)                        # broadcast add
    g = h * h + F.sigmoid(h) * x[:, :3]          # h used three times, a slice of x
    parts = paddle.split(g, 3, axis=1)           # only two of three pieces are used
    s = parts[0] * 2.0 + paddle.exp(parts[2]) - parts[0].reshape([4]).reshape([4, 1])
    return paddle.mean(s) + paddle.sum(F.relu(w)) * 0.1 + paddle.mean(F.tanh(F.linear(x, w, b)))  # fused op


def _value(arrays):
    tensors = [paddle.to_tensor(a) for a in arrays]
    return float(_f(*tensors).numpy())


def test_tape_gradients_match_central_differences():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)]
    tensors = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
    _f(*tensors).backward()
    eps = 1e-6
    for k, (a, t) in enumerate(zip(arrays, tensors)):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (_value(plus) - _value(minus)) / (2 * eps)
        np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-6, atol=1e-8, err_msg=f"input {k}")
