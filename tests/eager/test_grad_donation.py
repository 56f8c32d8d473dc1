"""Eager backward hands an output gradient's buffer to the gradient op that may write into it
(``inplace``: relu_grad's X@GRAD into Out@GRAD, as the static inplace pass does) when nothing but
the backward pass holds that gradient (eager/opnode.py ``_plan_donations``, ``OpNode.apply``).

Every scenario runs with donation on and off (``_EXCLUSIVE = -1``: no array ever qualifies) and
must give the same bits, including gradients that hooks, ``paddle.grad`` and a second backward
see; a gradient shared by two consumers or kept by a hook is never written."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.eager import opnode
from headrace.ops.registry import lookup
from headrace.ops.step import Step

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def eager():
    paddle.disable_static()


def _tensor(shape, grad=True):
    return paddle.to_tensor(RNG.standard_normal(shape).astype("float32"), stop_gradient=not grad)


def _donations(monkeypatch):
    """Whether each relu_grad/tanh_grad call was handed its Out@GRAD as X@GRAD's buffer (whether
    the kernel is called directly or through its Step, as in check mode)."""
    seen = []
    real_call = Step.call

    def call(self, ins, buffers=None, *args, **kwargs):
        if self.op_type in ("relu_grad", "tanh_grad"):
            seen.append(bool(buffers) and buffers.get("X@GRAD") is ins["Out@GRAD"])
        return real_call(self, ins, buffers, *args, **kwargs)
    monkeypatch.setattr(Step, "call", call)
    for op in ("relu_grad", "tanh_grad"):
        opdef = lookup(op)

        def kernel(ins, attrs, ctx, real=opdef.kernel):
            if not opnode.CHECK_KERNELS:
                seen.append(ctx.buffer("X@GRAD", ins["Out@GRAD"].shape, ins["Out@GRAD"].dtype) is ins["Out@GRAD"])
            return real(ins, attrs, ctx)
        monkeypatch.setattr(opdef, "kernel", kernel)
    return seen


def _chain(x, w):
    return F.relu(paddle.matmul(F.relu(paddle.matmul(x, w)), w)).sum()


def _shared(x, w):      # one gradient array reaches both relu nodes (elementwise_add passes it through)
    h = paddle.matmul(x, w)
    return (F.relu(h) + F.relu(h * 2.0)).sum()


def _hooked(x, w, kept):
    h = F.tanh(paddle.matmul(x, w))
    h.register_hook(lambda g: kept.append(g))      # keeps the gradient reaching h
    return (F.relu(h) * 3.0).sum()


def _run(model, donate, monkeypatch, **kwargs):
    if not donate:
        monkeypatch.setattr(opnode, "_EXCLUSIVE", -1)
    x, w = (paddle.to_tensor(a, stop_gradient=False) for a in _ARRAYS)
    loss = model(x, w, **kwargs)
    loss.backward()
    monkeypatch.undo()
    return x.grad.numpy().copy(), w.grad.numpy().copy()


_ARRAYS = [RNG.standard_normal((64, 80)).astype("float32"),   # gradients of 5120 elements: donated
           RNG.standard_normal((80, 80)).astype("float32") / 9]


@pytest.mark.parametrize("model", [_chain, _shared])
def test_donated_gradients_give_the_same_bits(model, monkeypatch):
    plain = _run(model, False, monkeypatch)
    seen = _donations(monkeypatch)
    donated = _run(model, True, monkeypatch)
    for a, b in zip(plain, donated):
        np.testing.assert_array_equal(a, b)
    if model is _chain:
        assert seen == [True, True]


def test_a_gradient_a_hook_keeps_is_not_written(monkeypatch):
    kept_plain, kept_donated = [], []
    plain = _run(_hooked, False, monkeypatch, kept=kept_plain)
    seen = _donations(monkeypatch)
    donated = _run(_hooked, True, monkeypatch, kept=kept_donated)
    for a, b in zip(plain, donated):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(kept_plain[0].numpy(), kept_donated[0].numpy())
    h = np.tanh(_ARRAYS[0] @ _ARRAYS[1])
    np.testing.assert_array_equal(kept_donated[0].numpy(), 3.0 * (h > 0))   # not tanh_grad's output written over it
    assert seen[-1] is False       # tanh_grad: its Out@GRAD is the hook's


def test_paddle_grad_and_a_second_backward(monkeypatch):
    seen = _donations(monkeypatch)
    x, w = (paddle.to_tensor(a, stop_gradient=False) for a in _ARRAYS)
    h = F.relu(paddle.matmul(x, w))
    loss = F.relu(paddle.matmul(h, w)).sum()
    dh, dx = paddle.grad([loss], [h, x], retain_graph=True)
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    np.testing.assert_array_equal(first, dx.numpy())
    x.clear_grad()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)
    assert True in seen
    expected = (np.maximum(_ARRAYS[0] @ _ARRAYS[1], 0) @ _ARRAYS[1] > 0).astype("float32") @ _ARRAYS[1].T
    np.testing.assert_allclose(dh.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_only_single_reader_output_gradients_are_planned():
    x, w = _tensor((3, 4)), _tensor((4, 4))
    out = F.relu(paddle.matmul(x, w))
    donations = [step[7] for step in out._node.plan.program]
    assert donations == [("X@GRAD", len(out._node.plan.saved))]
    product = paddle.matmul(x, w)
    assert all(step[7] is None for step in product._node.plan.program)   # matmul_v2_grad: no inplace


def test_the_calibration_ignores_a_tracer_reading_frame_locals():
    """A tracer that snapshots frame locals (debuggers) while the count is calibrated must not
    raise it: the calibration holds the array in lists only (review: a snapshot made an array
    with one other holder look exclusive)."""
    import sys

    def tracer(frame, event, arg):
        frame.f_locals   # noqa: B018 - the snapshot is the point
        return tracer
    sys.settrace(tracer)
    try:
        traced = opnode._exclusive_refcount()
    finally:
        sys.settrace(None)
    assert traced == opnode._EXCLUSIVE == opnode._exclusive_refcount()


def test_no_donation_under_the_nan_check(monkeypatch):
    """FLAGS_check_nan_inf reads an op's inputs after the kernel to say where a NaN came from."""
    seen = _donations(monkeypatch)
    paddle.set_flags({"FLAGS_check_nan_inf": True})
    try:
        _chain(*(paddle.to_tensor(a, stop_gradient=False) for a in _ARRAYS)).backward()
    finally:
        paddle.set_flags({"FLAGS_check_nan_inf": False})
    assert seen and not any(seen)


def test_small_gradients_are_not_handed_on(monkeypatch):
    """Below ``_DONATE_MIN`` elements a fresh array costs no more than the checks."""
    seen = _donations(monkeypatch)
    x, w = paddle.to_tensor(_ARRAYS[0][:5, :6], stop_gradient=False), paddle.to_tensor(_ARRAYS[1][:6, :6])
    _chain(x, w).backward()
    assert seen and not any(seen)
