import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.errors import HeadraceError
from headrace.ops.apply import ProgramMismatchError


def test_modes_switch_and_are_reported():
    assert not paddle.in_dynamic_mode()
    paddle.disable_static()
    try:
        assert paddle.in_dynamic_mode()
        with pytest.raises(RuntimeError, match="builds a static program"):
            fluid.layers.data(name="x", shape=[3])
    finally:
        paddle.enable_static()
    assert not paddle.in_dynamic_mode()


def test_program_guard_routes_layers_and_initializers():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 2])
        static.nn.fc(x, 3)
        assert static.default_main_program() is main and static.default_startup_program() is startup
    assert static.default_main_program() is not main
    assert [op.type for op in main.global_block().ops] == ["mul", "elementwise_add"]
    assert sorted(op.type for op in startup.global_block().ops) == ["fill_constant", "uniform_random"]
    assert all(v.persistable for v in startup.global_block().vars.values())


def test_mixing_variables_of_two_programs_is_an_error():
    a, b = static.Program(), static.Program()
    with static.program_guard(a):
        x = static.data("x", [2])
    with static.program_guard(b):
        y = static.data("y", [2])
        with pytest.raises(ProgramMismatchError, match="'x' belongs to another program"):
            paddle.add(x, y)
    assert issubclass(ProgramMismatchError, HeadraceError)
