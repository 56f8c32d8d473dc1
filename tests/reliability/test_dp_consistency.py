"""Issue 15 item 1: data-parallel places never drift apart after a failed step."""
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.ops.registry import lookup

X10 = (np.arange(10, dtype="float32") / 10).reshape(10, 1)


def _net(optimizer):
    x = static.data("X", [None, 1], "float32")
    loss = paddle.mean(static.nn.fc(x=x, size=10))
    optimizer.minimize(loss)
    exe = static.Executor(static.CPUPlace())
    exe.run(static.default_startup_program())
    prog = static.CompiledProgram(static.default_main_program()).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    return exe, prog, loss


def _fail_on_place(monkeypatch, op_type, when, place0):
    """Make ``op_type``'s kernel raise for the bias on place 0 (the calling thread) or on the other
    place (a worker thread) while ``when()`` is true: after the all-reduce, so the other place has
    applied its updates (or applies them)."""
    opdef = lookup(op_type)
    real = opdef.kernel

    def kernel(ins, attrs, ctx):
        on_main = threading.current_thread() is threading.main_thread()
        if when() and on_main == place0 and ins["Param"].ndim == 1:
            raise RuntimeError("injected failure in the update")
        return real(ins, attrs, ctx)

    monkeypatch.setattr(opdef, "kernel", kernel)


@pytest.mark.parametrize("make_opt", [lambda: paddle.optimizer.SGD(learning_rate=0.1),
                                      lambda: paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9),
                                      lambda: paddle.optimizer.Adam(learning_rate=0.1)],
                         ids=["sgd", "momentum", "adam"])
@pytest.mark.parametrize("place0", [True, False], ids=["place0_fails", "place1_fails"])
def test_places_agree_after_a_place_fails_in_its_update(monkeypatch, make_opt, place0):
    opt = make_opt()
    failing = {"on": False}
    op_type = type(opt).__name__.lower()
    _fail_on_place(monkeypatch, op_type, lambda: failing["on"], place0)
    exe, prog, loss = _net(opt)
    main = static.default_main_program()
    bias = [p for p in main.all_parameters() if len(p.shape) == 1][0]
    state = [v.name for v in main.list_vars() if v.persistable and not v.is_data]
    exe.run(prog, feed={"X": X10}, fetch_list=[loss])
    failing["on"] = True
    with pytest.raises(RuntimeError, match="injected failure in the update") as info:
        exe.run(prog, feed={"X": X10}, fetch_list=[loss])
    assert f"on place {0 if place0 else 1} of 2" in str(info.value)
    failing["on"] = False
    for _ in range(5):
        exe.run(prog, feed={"X": X10}, fetch_list=[loss])
    per_place = exe.run(prog, feed={"X": X10}, fetch_list=state, return_merged=False)
    for name, values in zip(state, per_place):
        np.testing.assert_array_equal(values[0], values[1], err_msg=f"{name} differs between places")
    assert bias.name in state
