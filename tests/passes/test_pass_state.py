"""Pass results are program state: the buffer plan (ops' ``buffer_reuse`` attribute) and
``Program.strict_order`` survive ``clone()`` and ``to_dict()``/``from_dict()``, a copy runs exactly
like the compiled program (same results, same measured peak), and ``check_program`` rejects a
malformed buffer plan."""
import json

import pytest

from headrace.core.program import Program
from headrace.core.roles import BUFFER_ATTR
from headrace.passes.inplace import buffer_plan
from headrace.passes.verify import ProgramError, check_program
from headrace.runtime import memory
import headrace.static as static

from .test_memory_plan import MEMORY, compiled_mlp, compiled_program


def _compiled(flags):
    compiled, startup, loss, feed, _, _ = compiled_mlp(flags)
    return compiled_program(compiled), startup, loss, feed


def _initial_state(startup):
    scope = static.Scope()
    static.Executor().run(startup, scope=scope)
    return {v.name: scope._get_array(v.name).copy() for v in startup.list_vars() if v.persistable}


def _run_twice(program, state, loss, feed):
    """Loss of two training steps from ``state``, and the second step's measured peak."""
    scope, exe = static.Scope(), static.Executor()
    for name, value in state.items():
        scope._set_array(name, value.copy())
    exe.run(program, feed=feed, fetch_list=[loss.name], scope=scope)
    memory.reset_max_memory_allocated()
    base = memory.memory_allocated()
    out, = exe.run(program, feed=feed, fetch_list=[loss.name], scope=scope)
    return out, memory.max_memory_allocated() - base


@pytest.mark.parametrize("copy", ["clone", "json"])
def test_buffer_plan_and_strict_order_survive_copies(copy):
    program, startup, loss, feed = _compiled({**MEMORY, "enable_sequential_execution": True})
    plan = buffer_plan(program)
    assert plan and program.strict_order is True
    if copy == "clone":
        twin = program.clone()
    else:
        twin = Program.from_dict(json.loads(json.dumps(program.to_dict())))
    ops, twin_ops = program.global_block().ops, twin.global_block().ops
    assert [plan.get(op.id) for op in ops] == [buffer_plan(twin).get(op.id) for op in twin_ops]
    assert twin.strict_order is True
    check_program(twin, feeds=("x", "y"))
    state = _initial_state(startup)
    out_a, peak_a = _run_twice(program, state, loss, feed)
    out_b, peak_b = _run_twice(twin, state, loss, feed)
    assert out_a.tobytes() == out_b.tobytes() and peak_a == peak_b


def _planned_op(program):
    return next(op for op in program.global_block().ops if op.attrs.get(BUFFER_ATTR))


@pytest.mark.parametrize("fault,match", [
    (lambda op, prog: [["NoSuchSlot", "x", "y"]], "is not an output"),
    (lambda op, prog: [[e[0], e[1], e[1]] for e in op.attrs[BUFFER_ATTR]], "another existing"),
    (lambda op, prog: [[e[0], e[1], "no_such_var"] for e in op.attrs[BUFFER_ATTR]], "another existing"),
    (lambda op, prog: [[e[0], e[1], next(v.name for v in prog.list_vars() if v.persistable)]
                       for e in op.attrs[BUFFER_ATTR]], "another existing"),
    (lambda op, prog: [[e[0], e[1], "x"] for e in op.attrs[BUFFER_ATTR]], "another existing"),
    (lambda op, prog: [["Out"]], "is not \\[out_slot"),
])
def test_check_program_rejects_a_malformed_buffer_plan(fault, match):
    program, _, _, _ = _compiled(MEMORY)
    op = _planned_op(program)
    op._set_attr(BUFFER_ATTR, fault(op, program))
    with pytest.raises(ProgramError, match=match):
        check_program(program, feeds=("x", "y"))


def test_check_program_rejects_a_buffer_plan_on_an_op_without_buffers_and_a_bad_strict_order():
    program, _, _, _ = _compiled(MEMORY)
    op = next(op for op in program.global_block().ops if op.type == "sgd")
    op._set_attr(BUFFER_ATTR, [["ParamOut", op.outputs["ParamOut"][0], "x"]])
    with pytest.raises(ProgramError, match="takes no buffers"):
        check_program(program, feeds=("x", "y"))
    op._remove_attr(BUFFER_ATTR)
    program.strict_order = "yes"
    with pytest.raises(ProgramError, match="strict_order"):
        check_program(program, feeds=("x", "y"))
