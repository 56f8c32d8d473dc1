"""Pass results are program state: the buffer plan (ops' ``buffer_reuse`` attribute) and
``Program.strict_order`` survive ``clone()`` and ``to_dict()``/``from_dict()``, a copy runs exactly
like the compiled program (same results, same measured peak), and ``check_program`` rejects a
malformed buffer plan."""
import json

import numpy as np
import pytest

import headrace.static as static
from headrace.core.program import Program
from headrace.core.roles import BUFFER_ATTR
from headrace.passes.inplace import buffer_plan
from headrace.passes.verify import ProgramError, check_program
from headrace.runtime import memory

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


def _view_program():
    """a = x + c; v = reshape(a) is read after b = x * c: a's buffer is not free for b."""
    import headrace as paddle
    main = Program()
    with static.program_guard(main, Program()):
        x, c = static.data("x", [4], "float32"), static.data("c", [4], "float32")
        a = paddle.add(x, c)
        v = paddle.reshape(a, [2, 2])
        b = paddle.multiply(x, c)
        out = paddle.add(paddle.reshape(v, [4]), b)
        e = paddle.subtract(x, c)
        out2 = paddle.add(out, e)
    return main, a, b, e, out2


FEED = {"x": np.arange(4, dtype="float32"), "c": np.full(4, 10, "float32")}


def _run(main, fetch):
    base = memory.memory_allocated()
    got, = static.Executor().run(main, feed=FEED, fetch_list=[fetch], scope=static.Scope())
    assert memory.memory_allocated() == base
    return got


def test_an_entry_whose_donor_is_still_read_through_a_view_is_not_used():
    main, a, b, _, out2 = _view_program()
    want = _run(main, out2)
    mul = next(op for op in main.global_block().ops if op.type == "elementwise_mul")
    mul._set_attr(BUFFER_ATTR, [["Out", b.name, a.name]])
    check_program(main, feeds=("x", "c"))   # structurally fine; only the run knows it is unsafe
    np.testing.assert_array_equal(_run(main, out2), want)


def test_a_donor_serves_one_output():
    main, a, b, e, out2 = _view_program()
    want = _run(main, out2)
    ops = main.global_block().ops
    for op_type, name in (("elementwise_mul", b.name), ("elementwise_sub", e.name)):
        next(op for op in ops if op.type == op_type)._set_attr(BUFFER_ATTR, [["Out", name, a.name]])
    with pytest.raises(ProgramError, match="serving one output"):
        check_program(main, feeds=("x", "c"))
    np.testing.assert_array_equal(_run(main, out2), want)   # the executor uses the first entry only


def test_an_entry_naming_another_output_is_not_used():
    main, a, b, e, out2 = _view_program()
    want = _run(main, out2)
    sub = next(op for op in main.global_block().ops if op.type == "elementwise_sub")
    sub._set_attr(BUFFER_ATTR, [["Out", b.name, a.name]])   # b is not sub's output
    with pytest.raises(ProgramError, match="is not an output"):
        check_program(main, feeds=("x", "c"))
    np.testing.assert_array_equal(_run(main, out2), want)
