"""Issue 15 item 9: what "data parallel equals one place" means.

The reference scales each place's loss gradient by 1 / (number of places) whatever the size of
its slice (ParallelExecutor's ScaleLossGradOpHandle: "ScaleLossGradOp only use device_count as
scale factor"; paddle_behaviour.md §6.3), and each place's loss is the mean over its own slice.
So with CoeffNumDevice a step equals one place's step on the whole batch only when the batch
splits evenly; on an uneven split (3 -> 2 + 1) it is the mean of the per-place gradients."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import names

LR = 0.5


def _net():
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 3
    with static.program_guard(main, startup), names.guard():
        x = static.data("x", [-1, 4], "float32")
        y = static.data("y", [-1, 2], "float32")
        loss = paddle.mean(paddle.square(static.nn.fc(x, size=2) - y))
        paddle.optimizer.SGD(learning_rate=LR).minimize(loss)
    return main, startup, loss


def _initial(startup):
    scope = static.Scope()
    static.Executor().run(startup, scope=scope)
    return {name: np.array(scope._get_array(name)) for name in scope.local_var_names()}


def _step(init, main, loss, feed, compiled=None):
    """Parameters (float64) before and after one step from the values ``init``."""
    exe, scope = static.Executor(), static.Scope()
    for name, value in init.items():
        scope.var(name).get_tensor().set(value)
    params = [p.name for p in main.all_parameters()]
    before = [np.array(scope._get_array(n), "float64") for n in params]
    exe.run(compiled or main, feed=feed, fetch_list=[loss], scope=scope)
    return before, [np.array(scope._get_array(n), "float64") for n in params]


@pytest.mark.parametrize("batch", [4, 3])
def test_two_places_versus_one_place(batch):
    main, startup, loss = _net()
    rng = np.random.default_rng(5)
    feed = {"x": rng.standard_normal((batch, 4)).astype("float32"),
            "y": rng.standard_normal((batch, 2)).astype("float32")}
    two = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    init = _initial(startup)
    before, after_two = _step(init, main, loss, feed, two)
    _, after_full = _step(init, main, loss, feed)            # one place, whole batch
    first = (batch + 1) // 2                                 # the first place takes the extra row
    slices = [{k: v[:first] for k, v in feed.items()}, {k: v[first:] for k, v in feed.items()}]
    grads = [[(b - a) / LR for b, a in zip(before, _step(init, main, loss, s)[1])] for s in slices]
    mean_of_places = [b - LR * (g0 + g1) / 2 for b, g0, g1 in zip(before, *grads)]
    for got, expected in zip(after_two, mean_of_places):     # the reference's semantics, both cases
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    differs = max(np.abs(a - b).max() for a, b in zip(after_two, after_full))
    if batch % 2 == 0:
        assert differs < 1e-6                                # even split: equals one place
    else:
        assert differs > 1e-3                                # uneven: not the full-batch step
