"""spectral_norm (op and nn.SpectralNorm), F.scaled_dot_product_attention, F.swiglu and
F.sequence_mask against NumPy written here; gradients against central differences."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from tests.nn.layer_checks import both_modes, fd_grad
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(23)
nn = paddle.nn


def _np_spectral(w, u, v, dim, iters, eps):
    mat = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    for _ in range(iters):
        v = mat.T @ u
        v = v / (np.sqrt(np.sum(v * v)) + eps)
        u = mat @ v
        u = u / (np.sqrt(np.sum(u * u)) + eps)
    return w / (u @ mat @ v)


def _spectral_ref(ins, attrs):
    return {"Out": _np_spectral(ins["Weight"], ins["U"], ins["V"], attrs["dim"], attrs["power_iters"],
                                attrs.get("eps", 1e-12)).astype(ins["Weight"].dtype)}


@pytest.mark.parametrize("dim, iters", [(0, 1), (1, 3), (2, 2)])
def test_spectral_norm_op(dim, iters):
    w = rng.standard_normal((3, 4, 2))
    rows = w.shape[dim]
    case = Case("spectral_norm", {"Weight": w, "U": rng.standard_normal(rows), "V": rng.standard_normal(24 // rows)},
                _spectral_ref, {"dim": dim, "power_iters": iters}, rtol=1e-10, batch_slots=())
    check_forward(case)
    check_infer_batch(case)


def test_spectral_norm_gradient_at_convergence():
    # the gradient treats the iterated u, v as constants (the reference); at a converged power
    # iteration that is the exact derivative of W / sigma_max(W), which central differences see
    w = rng.standard_normal((4, 3))
    w[0] *= 4   # a clear spectral gap
    check_grad("spectral_norm", {"Weight": w, "U": rng.standard_normal(4), "V": rng.standard_normal(3)},
               {"dim": 0, "power_iters": 200}, wrt=("Weight",), rtol=1e-5, atol=1e-7, batch_unknown=False)
    check_build_error("spectral_norm", {"Weight": w, "U": np.zeros(3), "V": np.zeros(3)}, {"dim": 0}, Exception,
                      match="U")


def test_spectral_norm_layer():
    with context.static_mode_guard(False):
        layer = nn.SpectralNorm([2, 3, 4], dim=1, power_iters=100)
        assert [p.trainable for p in layer.parameters()] == [False, False]
        w = rng.standard_normal((2, 3, 4)).astype(np.float32)
        out = layer(paddle.to_tensor(w)).numpy()
    top = np.linalg.svd(np.moveaxis(out, 1, 0).reshape(3, -1), compute_uv=False)[0]
    assert abs(top - 1) < 1e-5
    with context.static_mode_guard(False):
        u, v = layer.weight_u.numpy().astype(np.float64), layer.weight_v.numpy().astype(np.float64)
    both_modes(lambda: nn.SpectralNorm([3, 4], power_iters=2), rng.standard_normal((3, 4)),
               x_grad=True, params=[np.ones(3, np.float32), np.ones(4, np.float32)],
               reference=lambda x, p: _np_spectral(x, p[0], p[1], 0, 2, 1e-12))
    assert u.shape == (3,) and v.shape == (8,)


def _np_attention(q, k, v, mask=None, causal=False):
    qt, kt, vt = (np.swapaxes(t, -3, -2) for t in (q, k, v))
    scores = qt @ np.swapaxes(kt, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        scores = scores + np.triu(np.full(scores.shape[-2:], -1e9), 1)
    if mask is not None:
        scores = scores + (np.where(mask, 0.0, -1e9) if mask.dtype == bool else mask)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return np.swapaxes((e / e.sum(-1, keepdims=True)) @ vt, -3, -2)


def test_scaled_dot_product_attention():
    q, k, v = rng.standard_normal((2, 3, 2, 4)), rng.standard_normal((2, 5, 2, 4)), rng.standard_normal((2, 5, 2, 3))
    float_mask = rng.standard_normal((2, 2, 3, 5))
    bool_mask = rng.random((3, 5)) > 0.3
    bool_mask[:, 0] = True
    with context.static_mode_guard(False):
        t = [paddle.to_tensor(a) for a in (q, k, v)]
        np.testing.assert_allclose(F.scaled_dot_product_attention(*t).numpy(), _np_attention(q, k, v), rtol=1e-10)
        np.testing.assert_allclose(F.scaled_dot_product_attention(*t, attn_mask=paddle.to_tensor(float_mask)).numpy(),
                                   _np_attention(q, k, v, float_mask), rtol=1e-10)
        np.testing.assert_allclose(F.scaled_dot_product_attention(*t, attn_mask=paddle.to_tensor(bool_mask)).numpy(),
                                   _np_attention(q, k, v, bool_mask), rtol=1e-10)
        np.testing.assert_allclose(F.scaled_dot_product_attention(*t, is_causal=True).numpy(),
                                   _np_attention(q, k, v, causal=True), rtol=1e-10)
        three = F.scaled_dot_product_attention(*(paddle.to_tensor(a[0]) for a in (q, k, v)))
        np.testing.assert_allclose(three.numpy(), _np_attention(q[0], k[0], v[0]), rtol=1e-10)
    fd_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), [q, k, v])


def test_swiglu_and_sequence_mask():
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    with context.static_mode_guard(False):
        got = F.swiglu(paddle.to_tensor(x), paddle.to_tensor(y)).numpy()
        np.testing.assert_allclose(got, x / (1 + np.exp(-x)) * y, rtol=1e-12)
        halves = F.swiglu(paddle.to_tensor(x)).numpy()
        np.testing.assert_allclose(halves, x[:, :2] / (1 + np.exp(-x[:, :2])) * x[:, 2:], rtol=1e-12)
        lengths = np.array([[2, 0], [4, 1]], np.int64)
        mask = F.sequence_mask(paddle.to_tensor(lengths), maxlen=5, dtype="float32").numpy()
        want = (np.arange(5)[None, None, :] < lengths[..., None]).astype(np.float32)
        np.testing.assert_array_equal(mask, want)
        assert F.sequence_mask(paddle.to_tensor(lengths)).shape == [2, 2, 4]
    fd_grad(lambda a, b: F.swiglu(a, b), [x, y])


def test_inplace_activations():
    from headrace.core.errors import AttrError
    x = rng.standard_normal((3, 4))
    with context.static_mode_guard(False):
        leaf = paddle.to_tensor(x, stop_gradient=False)
        y = leaf * 2.0
        before = y * 1.0                       # reads the old y
        same = F.relu_(y)
        assert same is y
        np.testing.assert_array_equal(y.numpy(), np.maximum(2 * x, 0))
        paddle.sum(y * 3.0 + before).backward()
        np.testing.assert_allclose(leaf.grad.numpy(), 6.0 * (x > 0) + 2.0)
        for fn, want in ((F.tanh_, np.tanh(x)), (F.elu_, np.where(x > 0, x, np.expm1(x))),
                         (lambda t: F.hardtanh_(t, -0.5, 0.5), np.clip(x, -0.5, 0.5)),
                         (lambda t: F.leaky_relu_(t, 0.2), np.where(x > 0, x, 0.2 * x)),
                         (lambda t: F.thresholded_relu_(t, 0.3), np.where(x > 0.3, x, 0.0)),
                         (F.softmax_, np.exp(x) / np.exp(x).sum(-1, keepdims=True))):
            t = paddle.to_tensor(x)
            assert fn(t) is t
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
        with pytest.raises(AttrError, match="leaf"):
            F.relu_(paddle.to_tensor(x, stop_gradient=False))
    with pytest.raises(NotImplementedError, match="dygraph"):
        F.relu_(paddle.static.data("v", [2, 2], "float32"))
