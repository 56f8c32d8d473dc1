"""One static SGD step of a vision model, checked as w1 = w0 - lr * grad for every parameter."""
import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.core import context


def check_static_sgd_step(build, x, lr):
    """Build ``build()`` on an input like ``x`` in a fresh static program, run one SGD step of
    mean(out ** 2) and check every trainable parameter moved by exactly ``-lr * grad``; returns
    the number of trainable parameters."""
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            out = build()(static.data("image", list(x.shape), "float32"))
            static_loss = paddle.mean(out * out)
            paddle.optimizer.SGD(learning_rate=lr).minimize(static_loss)
        scope = static.Scope()
        exe = static.Executor(static.CPUPlace())
        exe.run(startup, scope=scope)
        params = [p.name for p in main.all_parameters() if p.trainable]
        w0 = [np.array(scope.find_var(n).get_tensor()).copy() for n in params]
        fetched = exe.run(main, feed={"image": x}, fetch_list=[static_loss] + [n + "@GRAD" for n in params],
                          scope=scope)
        w1 = [np.array(scope.find_var(n).get_tensor()) for n in params]
    assert np.isfinite(fetched[0])
    for a, b, g in zip(w0, w1, fetched[1:]):
        assert np.any(g != 0)
        np.testing.assert_allclose(b, a - lr * g, rtol=1e-6, atol=1e-7)
    return len(params)
