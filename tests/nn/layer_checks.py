"""Shared checks for the nn layers of issue 16.

- ``both_modes(make, x, reference)``: the layer built by ``make()`` runs in dygraph and in
  static mode with the same parameter values; outputs agree with each other and with
  ``reference(x, params)`` (NumPy written in the test), and the eager tape's gradients equal
  static autodiff's for the input and every trainable parameter.
- ``fd_grad(fn, arrays)``: eager float64 gradients of ``sum(fn(*tensors) * W)`` for every input
  against central finite differences.
"""
from __future__ import annotations

import numpy as np

import headrace as paddle
from headrace.core import context
from tests.nn.test_layers_both_modes import _eager, _static


def _values(make, seed=0):
    with context.static_mode_guard(False):
        template = make()
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(p.shape).astype(np.float32) * 0.5 if p.trainable else p.numpy()
                for p in template.parameters()]


def both_modes(make, x, reference=None, params=None, rtol=1e-5, atol=1e-6, x_grad=True):
    x = np.asarray(x, np.float32)
    params = _values(make) if params is None else params
    with context.static_mode_guard(False):
        layer = make()
        out_shape = layer(paddle.to_tensor(x)).shape
    weight = np.random.default_rng(5).standard_normal(out_shape).astype(np.float32)
    e_out, e_xg, e_grads, _ = _eager(make, x, x_grad, params, weight)
    s_out, s_xg, s_grads, _ = _static(make, x, x_grad, params, weight)
    np.testing.assert_allclose(e_out, s_out, rtol=1e-6, atol=1e-6)
    if reference is not None:
        want = reference(x.astype(np.float64), [p.astype(np.float64) for p in params])
        assert e_out.shape == want.shape, (e_out.shape, want.shape)
        np.testing.assert_allclose(e_out, want, rtol=rtol, atol=atol)
    if x_grad:
        np.testing.assert_allclose(e_xg, s_xg, rtol=1e-5, atol=1e-6)
    for k, (e, s) in enumerate(zip(e_grads, s_grads)):
        assert (e is None) == (s is None), f"parameter {k}"
        if e is not None:
            np.testing.assert_allclose(e, s, rtol=1e-5, atol=1e-6, err_msg=f"parameter {k}")
    return e_out


def fd_grad(fn, arrays, eps=1e-6, rtol=1e-6, atol=1e-8, wrt=None):
    """Analytic eager gradients of ``sum(fn(*inputs) * W)`` against central differences (float64)."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    with context.static_mode_guard(False):
        tensors = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
        out = fn(*tensors)
        weight = np.random.default_rng(11).uniform(-1, 1, out.shape)
        paddle.sum(out * paddle.to_tensor(weight)).backward()
        analytic = [t.grad.numpy() if t.grad is not None else np.zeros(a.shape) for t, a in zip(tensors, arrays)]

        def loss(values):
            return float(np.sum(fn(*[paddle.to_tensor(v) for v in values]).numpy() * weight))

        for k in wrt:
            numeric = np.zeros(arrays[k].shape)
            for idx in np.ndindex(arrays[k].shape):
                plus = [a.copy() for a in arrays]
                minus = [a.copy() for a in arrays]
                plus[k][idx] += eps
                minus[k][idx] -= eps
                numeric[idx] = (loss(plus) - loss(minus)) / (2 * eps)
            np.testing.assert_allclose(analytic[k], numeric, rtol=rtol, atol=atol, err_msg=f"input {k}")
