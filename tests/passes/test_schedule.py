"""passes/schedule.hoist_updates: updates move up to right after their gradient is final, never
past an op they depend on; results are bit-identical and the step's peak memory drops."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.device import cpu
from headrace.nn import functional as F
from headrace.passes import schedule
from headrace.runtime import Executor, Scope


def _mlp(shared=False, layers=4, width=64):
    main, startup = static.Program(), static.Program()
    startup.random_seed = 1
    with static.program_guard(main, startup):
        x = static.data("x", [-1, width], "float32")
        y = static.data("y", [-1, 1], "int64")
        h = x
        for i in range(layers):
            attr = paddle.ParamAttr(name="shared_w") if shared and i in (1, 2) else None
            h = static.nn.fc(h, size=width, activation="relu", weight_attr=attr)
        loss = paddle.mean(F.cross_entropy(static.nn.fc(h, size=10), y, reduction="none"))
        paddle.optimizer.Momentum(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def _conflicts(a, b) -> bool:
    wa, wb = set(a.output_arg_names), set(b.output_arg_names)
    return bool(wa & (wb | set(b.input_arg_names))) or bool(wb & set(a.input_arg_names))


@pytest.mark.parametrize("shared", [False, True])
def test_order_keeps_every_dependency_and_moves_updates_up(shared):
    main, _, _ = _mlp(shared)
    ops = main.global_block().ops
    order = schedule.hoist_updates(ops)
    assert sorted(map(id, order)) == sorted(map(id, ops))
    position = {id(op): i for i, op in enumerate(order)}
    for i, a in enumerate(ops):
        for b in ops[i + 1:]:
            if _conflicts(a, b):
                assert position[id(a)] < position[id(b)], (a.type, b.type)
    for k, op in enumerate(order):
        if op.type == "momentum":  # moved up as far as it goes: it depends on the op before it
            assert _conflicts(order[k - 1], op) or order[k - 1].type in ("momentum", "scale"), order[k - 1].type


def test_update_runs_right_after_its_gradient():
    main, _, _ = _mlp()
    order = schedule.hoist_updates(main.global_block().ops)
    types = [op.type for op in order]
    first = types.index("momentum")
    assert first < max(i for i, t in enumerate(types) if t == "mul_grad")  # not all at the end
    assert order[first - 1].type in ("mul_grad", "elementwise_add_grad")
    assert order[first].input("Grad")[0] in order[first - 1].output_arg_names


def _train(main, startup, loss, steps=3):
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((32, 64)).astype("float32"),
            "y": rng.integers(0, 10, (32, 1)).astype("int64")}
    cpu.reset_max_memory_allocated()
    base = cpu.memory_allocated()
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(steps)]
    peak = cpu.max_memory_allocated() - base
    params = [np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()]
    return losses, params, peak


@pytest.mark.parametrize("shared", [False, True])
def test_results_are_bit_identical_and_peak_memory_drops(shared, monkeypatch):
    hoisted = _train(*_mlp(shared))
    monkeypatch.setattr(schedule, "hoist_updates", lambda ops: list(ops))
    plain = _train(*_mlp(shared))
    for a, b in zip(hoisted[0], plain[0]):
        assert np.array_equal(a, b)
    assert len(hoisted[1]) == len(plain[1])
    for a, b in zip(hoisted[1], plain[1]):
        assert np.array_equal(a, b)
    assert hoisted[2] < plain[2], (hoisted[2], plain[2])


def _view_net():
    """A stop_gradient view of W is read by a gradient op that runs after W's gradient is
    complete: W's update must wait for it, although no variable name is shared."""
    main, startup = static.Program(), static.Program()
    startup.random_seed = 2
    with static.program_guard(main, startup):
        x = static.data("x", [4, 3], "float32")
        w = static.create_parameter([3, 4], "float32", attr=paddle.ParamAttr(name="w"))
        p = static.create_parameter([12], "float32", attr=paddle.ParamAttr(name="p"))
        view = paddle.reshape(w, [12])
        view.stop_gradient = True
        t2 = paddle.sum(view * p)
        t1 = paddle.sum(paddle.matmul(x, w))
        loss = t1 + t2
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def test_updates_wait_for_readers_of_views_of_the_parameter(monkeypatch):
    def run():
        main, startup, loss = _view_net()
        scope = Scope()
        exe = Executor()
        exe.run(startup, scope=scope)
        exe.run(main, feed={"x": np.ones((4, 3), "float32")}, scope=scope)
        return np.array(scope.find_var("p").get_tensor()), np.array(scope.find_var("w").get_tensor())

    hoisted = run()
    monkeypatch.setattr(schedule, "hoist_updates", lambda ops: list(ops))
    plain = run()
    np.testing.assert_array_equal(hoisted[0], plain[0])
    np.testing.assert_array_equal(hoisted[1], plain[1])
