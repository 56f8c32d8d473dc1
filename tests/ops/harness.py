"""Shared op checks: tests are tables of cases fed to these functions.

A ``Case`` names an op, gives concrete inputs and attrs, and an *independent* NumPy reference
(written for the test, not calling the kernel).  The checks:

- ``check_forward``: build a one-op program with exact input shapes, run it, compare every output
  the reference gives (values, shapes, dtypes) and the inferred output shapes/dtypes;
- ``check_infer_batch``: declare dim 0 of the ``batch_slots`` inputs as -1, check the inferred
  shapes are compatible with the real outputs (and that ``batch_outputs`` keep -1 in dim 0), then run
  that program too;
- ``infer_shapes``: the inferred output shapes for inputs with -1 anywhere, without running;
- ``check_build_error``: building the op raises the given error type, and the message names the op
  type and the file:line that built it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.runtime import Executor, Scope

# Grad checks (issue: autodiff) will join these; forward checks run in every mode available.


@dataclass
class Case:
    op: str
    inputs: dict
    reference: Callable
    attrs: dict = field(default_factory=dict)
    id: str = ""
    outputs: dict | None = None          # slot -> count for "many" output slots
    batch_slots: tuple | None = None     # input slots whose dim 0 is the batch (default: all rank>=1)
    batch_outputs: tuple = ()            # output slots whose inferred dim 0 must stay -1
    rtol: float = 1e-6
    atol: float = 0.0
    seed: int | None = None              # for random ops: Program.random_seed

    def __str__(self):
        return self.id or self.op


def _declare(block, inputs, batch_unknown, batch_slots):
    ins = {}
    for slot, value in inputs.items():
        values = value if isinstance(value, list) else [value]
        created = []
        for i, arr in enumerate(values):
            arr = np.asarray(arr)
            shape = list(arr.shape)
            if batch_unknown and shape and (batch_slots is None or slot in batch_slots):
                shape[0] = -1
            var = block.create_var(name=f"{slot.lower()}_{i}", shape=shape, dtype=arr.dtype.name, is_data=True)
            created.append(var)
        ins[slot] = created if isinstance(value, list) else created[0]
    return ins


def _feed(inputs):
    feed = {}
    for slot, value in inputs.items():
        values = value if isinstance(value, list) else [value]
        for i, arr in enumerate(values):
            feed[f"{slot.lower()}_{i}"] = np.asarray(arr)
    return feed


def build_and_run(case: Case, batch_unknown=False):
    """Build a one-op program for ``case`` and run it; returns (op outputs {slot: [Variable]}, values)."""
    from headrace.ops.apply import apply_op

    main, startup = Program(), Program()
    if case.seed is not None:
        main.random_seed = case.seed
    with program_guard(main, startup):
        block = main.global_block()
        ins = _declare(block, case.inputs, batch_unknown, case.batch_slots)
        outs = None
        if case.outputs:
            outs = {slot: [block.create_var(name=f"{slot.lower()}_out_{i}") for i in range(n)]
                    for slot, n in case.outputs.items()}
        out_vars = apply_op(case.op, ins, case.attrs, outs)
    fetch = [v for vs in out_vars.values() for v in vs]
    values = Executor().run(main, feed=_feed(case.inputs), fetch_list=fetch, scope=Scope())
    result, k = {}, 0
    for slot, vs in out_vars.items():
        result[slot] = values[k:k + len(vs)]
        k += len(vs)
    return out_vars, result


def _compare(case, out_vars, got, exact_shapes):
    expected = case.reference(case.inputs, case.attrs)
    assert expected, "reference returned no outputs"
    for slot, want in expected.items():
        wants = want if isinstance(want, list) else [want]
        gots = got[slot]
        assert len(gots) == len(wants), f"{case}: output {slot}: {len(gots)} values, expected {len(wants)}"
        for var, g, w in zip(out_vars[slot], gots, wants):
            w = np.asarray(w)
            assert g.shape == w.shape, f"{case}: output {slot} shape {g.shape}, expected {w.shape}"
            assert g.dtype == w.dtype, f"{case}: output {slot} dtype {g.dtype}, expected {w.dtype}"
            assert var.dtype == g.dtype, f"{case}: output {slot} inferred dtype {var.dtype}, ran {g.dtype}"
            if exact_shapes:
                assert tuple(var.shape) == g.shape, f"{case}: {slot} inferred {var.shape}, ran {g.shape}"
            else:
                assert len(var.shape) == g.ndim and all(d in (-1, a) for d, a in zip(var.shape, g.shape)), \
                    f"{case}: {slot} inferred {var.shape} incompatible with {g.shape}"
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol, err_msg=f"{case}: {slot}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{case}: {slot}")


def check_forward(case: Case):
    out_vars, got = build_and_run(case)
    _compare(case, out_vars, got, exact_shapes=True)


def check_infer_batch(case: Case):
    out_vars, got = build_and_run(case, batch_unknown=True)
    _compare(case, out_vars, got, exact_shapes=False)
    for slot in case.batch_outputs:
        for var in out_vars[slot]:
            assert var.shape[0] == -1, f"{case}: {slot} inferred {var.shape}, expected -1 batch dim"


def check_build_error(op, inputs, attrs, error, match=None, outputs=None):
    """Building ``op`` must raise ``error``; the message names the op and this caller's file."""
    from headrace.ops.apply import apply_op

    main = Program()
    with program_guard(main, Program()):
        ins = _declare(main.global_block(), inputs, False, None)
        with pytest.raises(error) as info:
            apply_op(op, ins, attrs, outputs)
    message = str(info.value)
    assert f"`{op}`" in message, message
    assert "built at" in message and ".py:" in message, f"message does not give the building line: {message}"
    if match:
        assert match in message, message
    return message


def infer_shapes(op, shapes, attrs, dtype="float32", outputs=None) -> dict:
    """Build ``op`` on inputs of the given shapes (-1 allowed anywhere; a list of shapes for a
    ``many`` slot) without running it; returns ``{slot: [inferred shape, ...]}``."""
    from headrace.ops.apply import apply_op

    main = Program()
    with program_guard(main, Program()):
        block = main.global_block()
        ins = {}
        for slot, shape in shapes.items():
            group = shape if isinstance(shape, list) else [shape]
            made = [block.create_var(name=f"{slot.lower()}{i}", shape=list(g), dtype=dtype, is_data=True)
                    for i, g in enumerate(group)]
            ins[slot] = made if isinstance(shape, list) else made[0]
        outs = None
        if outputs:
            outs = {slot: [block.create_var(name=f"o{i}") for i in range(n)] for slot, n in outputs.items()}
        result = apply_op(op, ins, attrs, outs)
    return {slot: [tuple(v.shape) for v in vs] for slot, vs in result.items()}


def ids(cases):
    return [str(c) for c in cases]
