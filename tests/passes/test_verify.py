import pytest

import headrace.fluid as fluid
import headrace.static as static
from headrace.passes.verify import ProgramError, check_program


def _program():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        h = fluid.layers.fc(input=x, size=3, act="relu")
        loss = fluid.layers.mean(h)
    return main, startup, h, loss


def test_well_formed_programs_pass():
    main, startup, *_ = _program()
    check_program(main)
    check_program(startup)
    check_program(main.clone(for_test=True))
    check_program(static.Program.from_dict(main.to_dict()))


def test_read_before_write_is_caught():
    main, _, h, _ = _program()
    block = main.global_block()
    block.ops.insert(0, block.ops.pop(2))  # move relu before its producer
    with pytest.raises(ProgramError, match="'fc_0.tmp_1' is read before any op writes it"):
        check_program(main)


def test_feeds_count_as_defined():
    main, _, h, _ = _program()
    block = main.global_block()
    y = block.create_var(name="y", shape=[-1, 3], dtype="float32")
    block.append_op("elementwise_add", {"X": h, "Y": y}, {"Out": block.create_var(name="z")})
    with pytest.raises(ProgramError, match="'y' is read before"):
        check_program(main)
    check_program(main, feeds=["y"])


def test_stale_shapes_and_bad_attrs_are_caught():
    main, _, h, _ = _program()
    h.shape = (-1, 5)
    with pytest.raises(ProgramError, match="recorded as shape"):
        check_program(main)
    h.shape = (-1, 3)
    main.global_block().ops[0].attrs["bogus"] = 1
    with pytest.raises(ProgramError, match=r"unknown attributes \['bogus'\]"):
        check_program(main)


def test_removed_variables_and_unknown_ops_are_caught():
    main, _, h, _ = _program()
    main.global_block()._remove_var("fc_0.tmp_0")
    with pytest.raises(ProgramError, match="'fc_0.tmp_0' does not exist"):
        check_program(main)
    other, *_ = _program()
    other.global_block().ops[0].type = "mystery"
    with pytest.raises(ProgramError, match="`mystery` is not registered"):
        check_program(other)
