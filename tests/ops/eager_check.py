"""One op in both modes: its eager outputs and eager (tape) gradients equal the static ones.

``check_both_modes(op, inputs, attrs)`` runs the op in a static one-op program and eagerly on
Tensors; the outputs must agree exactly, and for the floating inputs the tape's gradients of
``L = sum_k <Out_k, W_k>`` (fixed random ``W_k``) must equal the gradients the static backward
computes (which ``gradcheck.check_grad`` compares with finite differences).
"""
from __future__ import annotations

import numpy as np

from headrace.core import context
from headrace.eager import tape
from headrace.eager.tensor import Tensor
from headrace.ops.apply import apply_op
from headrace.runtime import Executor, Scope
from tests.ops.gradcheck import _as_list, _build, _default_wrt, _differentiable_outputs, _feed


def _eager(op, inputs, attrs, wrt, out_slots, weights, outputs):
    with context.static_mode_guard(False):
        ins = {slot: [Tensor(np.asarray(a), stop_gradient=slot not in wrt) for a in _as_list(v)]
               for slot, v in inputs.items()}
        call = {slot: (ts if isinstance(inputs[slot], list) else ts[0]) for slot, ts in ins.items()}
        outs = apply_op(op, call, attrs)
        targets = [t for slot in out_slots for t in outs[slot]]
        values = [t.numpy() for t in targets]
        if weights is not None and wrt:
            live = [(t, w) for t, w in zip(targets, weights) if not t.stop_gradient]
            tape.run_backward([t for t, _ in live], [w for _, w in live])
        grads = [t.grad.numpy() if t.grad is not None else None
                 for slot in wrt for t in ins[slot]]
    return values, grads


def check_both_modes(op, inputs, attrs=None, wrt=None, out_slots=None, outputs=None, rtol=1e-12, atol=1e-12):
    attrs = dict(attrs or {})
    wrt = tuple(wrt) if wrt is not None else _default_wrt(inputs)
    out_slots = _differentiable_outputs(op, out_slots)
    forward, targets, _ = _build(op, inputs, attrs, (), outputs, out_slots, False)
    static_out = Executor().run(forward, feed=_feed(inputs), fetch_list=targets, scope=Scope())
    rng = np.random.default_rng(7)
    weights = [rng.uniform(-1, 1, np.shape(o)).astype(o.dtype) if o.dtype.kind == "f" else None
               for o in static_out]
    eager_out, eager_grads = _eager(op, inputs, attrs, wrt, out_slots, None, outputs)
    for k, (s, e) in enumerate(zip(static_out, eager_out)):
        assert s.shape == e.shape and s.dtype == e.dtype, f"{op}: output {k}: {e.shape} {e.dtype} vs {s.shape}"
        np.testing.assert_array_equal(e, s, err_msg=f"{op}: eager output {k} differs from static")
    if not wrt or any(w is None for w in weights):
        return
    program, _, grads = _build(op, inputs, attrs, wrt, outputs, out_slots, False, weights)
    fetch = [g for g in grads if g is not None]
    feed = {**_feed(inputs), **{f"target_grad_{k}": w for k, w in enumerate(weights)}}
    values = iter(Executor().run(program, feed=feed, fetch_list=fetch, scope=Scope()))
    static_grads = [next(values) if g is not None else None for g in grads]
    _, eager_grads = _eager(op, inputs, attrs, wrt, out_slots, weights, outputs)
    for k, (s, e) in enumerate(zip(static_grads, eager_grads)):
        if s is None:
            assert e is None or not np.any(e), f"{op}: eager gives a gradient {k} the static backward does not"
            continue
        assert e is not None, f"{op}: no eager gradient for input {k}"
        np.testing.assert_allclose(e, s, rtol=rtol, atol=atol, err_msg=f"{op}: eager gradient {k}")
