"""ClipGradByGlobalNorm sums the squared norms in the parameters' name order in both modes, so a
float32 training step with it is bit-identical between eager and static mode (static mode lists
the gradients sorted by name, eager mode in the parameter list's order: w0, b0, w1, b1)."""
import numpy as np

import headrace as paddle
import headrace.nn as nn
import headrace.static as static
from headrace.core import context
from headrace.runtime import Executor, Scope


class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return paddle.mean(self.l2(paddle.tanh(self.l1(x))) ** 2)


def _eager(x, seed):
    with context.static_mode_guard(False):
        paddle.seed(seed)
        net = _Net()
        start = [p.numpy() for p in net.parameters()]
        opt = paddle.optimizer.SGD(0.1, parameters=net.parameters(), grad_clip=nn.ClipGradByGlobalNorm(1e-3))
        net(paddle.to_tensor(x)).backward()
        opt.step()
        return start, [p.numpy() for p in net.parameters()]


def _static(x, start):
    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        net = _Net()
        loss = net(static.data("x", list(x.shape), "float32"))
        paddle.optimizer.SGD(0.1, grad_clip=nn.ClipGradByGlobalNorm(1e-3)).minimize(loss)
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    for p, value in zip(net.parameters(), start):
        scope.var(p.name).get_tensor().set(value)
    exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)
    return [scope.find_var(p.name).get_tensor().numpy() for p in net.parameters()]


def test_a_clipped_step_is_bit_identical_between_modes():
    differ = []
    for seed in range(8):   # several seeds: the two sum orders round alike for some of them
        x = np.random.default_rng(seed).standard_normal((4, 16)).astype("float32")
        start, eager = _eager(x, seed)
        static_params = _static(x, start)
        if not all(np.array_equal(s, e) for s, e in zip(static_params, eager)):
            differ.append(seed)
    assert differ == []
