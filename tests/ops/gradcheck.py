"""Gradient checks against central finite differences, in float64.

``check_grad(op, inputs, attrs)`` builds a one-op program, seeds the backward of every
differentiable output ``k`` with a fixed random tensor ``W_k`` (so the checked scalar is
``L = sum_k <Out_k, W_k>`` and every output element matters), and compares the analytic input
gradients from ``gradients(...)`` with ``(L(x + eps) - L(x - eps)) / (2 eps)`` per element.

The analytic run also happens on a program whose inputs have an unknown (-1) batch dim, so the
gradient ops' shape inference is exercised the way real programs use it.  Because the input is a
feed read by the forward op and then by the gradient op, an input slot declared ``no_need_buffer``
reaches the gradient kernel as shape-only: a gradient kernel that reads its data fails here.

``check_program_grad(build, feeds, wrt)`` does the same for a whole program built by ``build()``
(returning the scalar loss), differentiating with respect to the named variables (data or
parameters).
"""
from __future__ import annotations

import numpy as np

from headrace.autodiff import gradients
from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.ops.apply import apply_op
from headrace.ops.registry import lookup
from headrace.runtime import Executor, Scope


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _declare(block, inputs, wrt, batch_unknown):
    ins = {}
    for slot, value in inputs.items():
        made = []
        for i, arr in enumerate(_as_list(value)):
            arr = np.asarray(arr)
            shape = list(arr.shape)
            if batch_unknown and shape:
                shape[0] = -1
            var = block.create_var(name=f"{slot.lower()}_{i}", shape=shape, dtype=arr.dtype.name,
                                   is_data=True, stop_gradient=slot not in wrt)
            made.append(var)
        ins[slot] = made if isinstance(value, list) else made[0]
    return ins


def _feed(inputs):
    return {f"{slot.lower()}_{i}": np.asarray(arr)
            for slot, value in inputs.items() for i, arr in enumerate(_as_list(value))}


def _default_wrt(inputs):
    return tuple(slot for slot, value in inputs.items()
                 if all(np.asarray(a).dtype.kind == "f" for a in _as_list(value)))


def _build(op, inputs, attrs, wrt, outputs, out_slots, batch_unknown, weights=None, seed=None):
    main, startup = Program(), Program()
    if seed is not None:
        main.random_seed = seed
    with program_guard(main, startup):
        block = main.global_block()
        ins = _declare(block, inputs, wrt, batch_unknown)
        outs = None
        if outputs:
            outs = {slot: [block.create_var(name=f"{slot.lower()}_out_{i}") for i in range(n)]
                    for slot, n in outputs.items()}
        out_vars = apply_op(op, ins, attrs, outs)
        targets = [v for slot in out_slots for v in out_vars[slot]]
        grads = None
        if weights is not None:
            seeds = [block.create_var(name=f"target_grad_{k}", shape=list(w.shape), dtype=w.dtype.name,
                                      is_data=True) for k, w in enumerate(weights)]
            wrt_vars = [v for slot in wrt for v in _as_list(ins[slot])]
            grads = gradients(targets, wrt_vars, target_gradients=seeds)
    return main, targets, grads


def _differentiable_outputs(op, out_slots):
    if out_slots is not None:
        return tuple(out_slots)
    opdef = lookup(op)
    return tuple(s.name for s in opdef.outputs if not s.optional)


def check_grad(op, inputs, attrs=None, wrt=None, out_slots=None, outputs=None, eps=1e-6,
               rtol=1e-6, atol=1e-8, seed=None, batch_unknown=True):
    """Analytic gradients of ``op`` match central differences (see the module docstring).

    ``wrt``: input slots to differentiate (default: every floating slot); ``out_slots``: outputs
    that feed the checked scalar (default: the op's non-optional outputs).
    """
    attrs = dict(attrs or {})
    wrt = tuple(wrt) if wrt is not None else _default_wrt(inputs)
    out_slots = _differentiable_outputs(op, out_slots)
    for slot in wrt:
        for arr in _as_list(inputs[slot]):
            assert np.asarray(arr).dtype == np.float64, f"{op}: grad checks run in float64 ({slot})"
    forward, targets, _ = _build(op, inputs, attrs, wrt, outputs, out_slots, False, seed=seed)
    feed = _feed(inputs)
    exe = Executor()
    outs = exe.run(forward, feed=feed, fetch_list=targets, scope=Scope())
    rng = np.random.default_rng(1234)
    weights = [rng.uniform(-1.0, 1.0, np.shape(o)).astype(o.dtype) for o in outs]
    weight_feed = {f"target_grad_{k}": w for k, w in enumerate(weights)}

    def loss(values) -> float:
        got = exe.run(forward, feed=values, fetch_list=targets, scope=Scope())
        return float(sum(np.sum(g.astype(np.float64) * w) for g, w in zip(got, weights)))

    analytic_runs = []
    for unknown in ((False, True) if batch_unknown else (False,)):
        program, _, grads = _build(op, inputs, attrs, wrt, outputs, out_slots, unknown, weights, seed)
        fetch = [g for g in grads if g is not None]
        values = iter(exe.run(program, feed={**feed, **weight_feed}, fetch_list=fetch, scope=Scope()))
        analytic_runs.append([next(values) if g is not None else None for g in grads])

    index = 0
    for slot in wrt:
        for i, arr in enumerate(_as_list(inputs[slot])):
            name = f"{slot.lower()}_{i}"
            numeric = np.zeros(np.shape(arr))
            flat = numeric.reshape(-1)
            base = np.array(arr, dtype=np.float64)
            for j in range(base.size):
                plus, minus = base.copy(), base.copy()
                plus.reshape(-1)[j] += eps
                minus.reshape(-1)[j] -= eps
                flat[j] = (loss({**feed, name: plus}) - loss({**feed, name: minus})) / (2 * eps)
            for run in analytic_runs:
                got = run[index]
                if got is None:
                    assert np.all(numeric == 0), f"{op}: no gradient for {slot}[{i}], but it is not zero"
                    continue
                assert got.shape == numeric.shape, f"{op}: grad of {slot}[{i}] shape {got.shape}"
                np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol,
                                           err_msg=f"{op}: gradient of {slot}[{i}]")
            index += 1


def check_program_grad(build, feeds, wrt, eps=1e-6, rtol=1e-6, atol=1e-8, seed=None):
    """Gradients of the scalar ``build()`` returns, with respect to the variables named in
    ``wrt`` (data fed in float64, or parameters initialised by the startup program), match
    central differences."""
    main, startup = Program(), Program()
    if seed is not None:
        main.random_seed = seed
        startup.random_seed = seed
    with program_guard(main, startup):
        loss = build()
        block = main.global_block()
        wrt_vars = [block.var(n) for n in wrt]
        for v in wrt_vars:
            v.stop_gradient = False
        forward = main.clone()
        grads = gradients([loss], wrt_vars)
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    base = {}
    for v in wrt_vars:
        if v.name in feeds:
            base[v.name] = np.array(feeds[v.name], dtype=np.float64)
        else:
            base[v.name] = np.array(scope.find_var(v.name).get_tensor())
    analytic = exe.run(main, feed=dict(feeds), fetch_list=grads, scope=scope)

    def loss_at(name, value) -> float:
        if name in feeds:
            out = exe.run(forward, feed={**feeds, name: value}, fetch_list=[loss.name], scope=scope)
        else:
            scope.find_var(name).get_tensor().set(value)
            out = exe.run(forward, feed=dict(feeds), fetch_list=[loss.name], scope=scope)
            scope.find_var(name).get_tensor().set(base[name])
        return float(out[0])

    for v, got in zip(wrt_vars, analytic):
        numeric = np.zeros(base[v.name].shape)
        for j in range(numeric.size):
            plus, minus = base[v.name].copy(), base[v.name].copy()
            plus.reshape(-1)[j] += eps
            minus.reshape(-1)[j] -= eps
            numeric.reshape(-1)[j] = (loss_at(v.name, plus) - loss_at(v.name, minus)) / (2 * eps)
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol, err_msg=f"gradient of {v.name}")
