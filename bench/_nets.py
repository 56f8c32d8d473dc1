"""Networks shared by the benchmark scripts."""
from __future__ import annotations

import headrace as paddle
import headrace.static as static
from headrace.nn import functional as F


def mlp_program(hidden, layers, lr=1e-3, optimizer=None):
    """x[-1, hidden] -> layers x (fc hidden + relu) -> fc 10 -> softmax cross-entropy (mean), SGD
    (or ``optimizer()``); returns (main, startup, loss)."""
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 1
    with static.program_guard(main, startup):
        h = static.data("x", [-1, hidden], "float32")
        y = static.data("y", [-1, 1], "int64")
        for _ in range(layers):
            h = static.nn.fc(h, size=hidden, activation="relu")
        logits = static.nn.fc(h, size=10)
        loss = paddle.mean(F.cross_entropy(logits, y, reduction="none"))
        (optimizer() if optimizer else paddle.optimizer.SGD(learning_rate=lr)).minimize(loss)
    return main, startup, loss
