"""Train, or train-save, or load-train, in a process of its own (tests/framework/test_resume.py).

    python resume_script.py MODE PHASE STEPS CKPT_DIR OUT.npz

MODE: static | eager | recompute | dp.  PHASE: ``full`` trains 2*STEPS steps; ``first`` trains
STEPS steps and saves a checkpoint (model, optimizer, LR schedule, RNG state) to CKPT_DIR;
``second`` builds the same model in this fresh process, loads the checkpoint and trains STEPS
more.  OUT.npz receives the losses (``loss_<step>``) and the final parameters (``param:<name>``).
Dropout (random), Adam (accumulators) and a step-decay schedule make every part of the state
matter.
"""
import os
import sys

import numpy as np

import headrace as paddle
import headrace.static as static


def batch(step):
    rng = np.random.default_rng(100 + step)
    return rng.random((8, 6)).astype("float32"), rng.random((8, 1)).astype("float32")


def static_run(mode, phase, steps, ckpt):
    paddle.enable_static()
    main, startup = static.default_main_program(), static.default_startup_program()
    main.random_seed = 7    # dropout draws from the program's generator (saved in .pdopt)
    startup.random_seed = 3
    x = static.data("x", [-1, 6], "float32")
    y = static.data("y", [-1, 1], "float32")
    h1 = static.nn.fc(x, 16, activation="relu")
    h2 = paddle.nn.functional.dropout(static.nn.fc(h1, 16, activation="relu"), 0.3)
    loss = paddle.mean((static.nn.fc(h2, 1) - y) ** 2)
    schedule = paddle.optimizer.lr.StepDecay(0.05, step_size=2, gamma=0.5)
    opt = paddle.optimizer.Adam(schedule)
    if mode == "recompute":
        opt = paddle.incubate.optimizer.RecomputeOptimizer(opt)
        opt._set_checkpoints([h1])
    opt.minimize(loss)
    exe = static.Executor(static.CPUPlace())
    exe.run(startup)
    program = main
    if mode == "dp":
        program = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    if phase == "second":
        static.load(main, os.path.join(ckpt, "model"), exe)
        paddle.set_rng_state(paddle.load(os.path.join(ckpt, "rng")))
    losses = []
    for step in range(2 * steps if phase == "full" else steps):
        xs, ys = batch(step + (steps if phase == "second" else 0))
        value, = exe.run(program, feed={"x": xs, "y": ys}, fetch_list=[loss])
        losses.append(np.asarray(value))
        schedule.step()
    if phase == "first":
        static.save(main, os.path.join(ckpt, "model"))
        paddle.save(paddle.get_rng_state(), os.path.join(ckpt, "rng"))
    params = {p.name: np.array(static.global_scope().find_var(p.name).get_tensor()) for p in main.all_parameters()}
    return losses, params


def eager_run(phase, steps, ckpt):
    paddle.disable_static()
    paddle.seed(11)
    net = paddle.nn.Sequential(paddle.nn.Linear(6, 16), paddle.nn.ReLU(), paddle.nn.Dropout(0.3),
                               paddle.nn.Linear(16, 1))
    schedule = paddle.optimizer.lr.StepDecay(0.05, step_size=2, gamma=0.5)
    opt = paddle.optimizer.Adam(schedule, parameters=net.parameters())
    if phase == "second":
        net.set_state_dict(paddle.load(os.path.join(ckpt, "net.pdparams")))
        opt.set_state_dict(paddle.load(os.path.join(ckpt, "opt.pdopt")))
        paddle.set_rng_state(paddle.load(os.path.join(ckpt, "rng")))
    losses = []
    for step in range(2 * steps if phase == "full" else steps):
        xs, ys = batch(step + (steps if phase == "second" else 0))
        loss = paddle.mean((net(paddle.to_tensor(xs)) - paddle.to_tensor(ys)) ** 2)
        loss.backward()
        opt.step()
        opt.clear_grad()
        schedule.step()
        losses.append(loss.numpy())
    if phase == "first":
        paddle.save(net.state_dict(), os.path.join(ckpt, "net.pdparams"))
        paddle.save(opt.state_dict(), os.path.join(ckpt, "opt.pdopt"))
        paddle.save(paddle.get_rng_state(), os.path.join(ckpt, "rng"))
    return losses, {k: v.numpy() for k, v in net.state_dict().items()}


def main():
    mode, phase, steps, ckpt, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    if mode == "eager":
        losses, params = eager_run(phase, steps, ckpt)
    else:
        losses, params = static_run(mode, phase, steps, ckpt)
    arrays = {f"loss_{i}": v for i, v in enumerate(losses)}
    arrays.update({f"param:{k}": v for k, v in params.items()})
    np.savez(out, **arrays)


if __name__ == "__main__":
    main()
