"""Draw the README's memory timeline: an 8-layer MLP whose checkpoints headrace.memory chose for a
budget of 75% of the plain step's peak, trained with Adam.

    python scripts/memory_timeline.py docs/memory_timeline.png
"""
import sys

import headrace as paddle
import headrace.static as static
from headrace import memory
from headrace.memory.planner import Analysis


def build(budget_fraction=0.75):
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        h = static.data("x", [-1, 256], "float32")
        for _ in range(8):
            h = static.nn.fc(h, size=256, activation="relu")
        loss = paddle.mean(static.nn.fc(h, size=1))
        feed = {"x": [512, 256]}
        plain = Analysis(loss, feed).plain.peak_bytes          # the step without recompute
        opt = paddle.incubate.optimizer.RecomputeOptimizer(paddle.optimizer.SGD(0.01))
        opt._set_checkpoints("auto", budget=int(plain * budget_fraction), feed=feed)
        opt.minimize(loss)
    return main, loss, feed


def main(path):
    program, loss, feed = build()
    est = memory.plot(program, feed, path, fetch_list=[loss],
                      title="8 x fc 256 + relu, batch 512, checkpoints chosen for 75% of the plain peak")
    print(f"peak {est.peak_bytes} bytes at op {est.peak_op}; written {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "memory_timeline.png")
