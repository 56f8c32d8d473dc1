import headrace as paddle
import headrace.fluid as fluid


def test_fluid_create_parameter_name_does_not_rename_the_callers_attr():
    paddle.enable_static()
    try:
        attr = fluid.ParamAttr(name="shared_w")
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            a = fluid.layers.create_parameter([2, 3], "float32", name="first", attr=attr)
            b = fluid.layers.create_parameter([2, 3], "float32", attr=attr)
        assert (a.name, b.name, attr.name) == ("first", "shared_w", "shared_w")
    finally:
        paddle.disable_static()
