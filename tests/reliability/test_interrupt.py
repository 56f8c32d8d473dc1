"""Issue 15 item 3: Ctrl-C during exe.run is a KeyboardInterrupt, frees the run's buffers and
never leaves a variable half-updated."""
import gc
import inspect
import os
import signal
import sys
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.ops.registry import lookup
from headrace.runtime import memory

X = np.linspace(-1, 1, 64 * 32, dtype="float32").reshape(64, 32)


def _net(optimizer=None, width=256):
    x = static.data("x", [None, 32], "float32")
    h = static.nn.fc(x, size=width, activation="relu")
    loss = paddle.mean(static.nn.fc(h, size=1))
    (optimizer or paddle.optimizer.SGD(learning_rate=0.1)).minimize(loss)
    exe = static.Executor()
    exe.run(static.default_startup_program())
    return exe, loss


def _interrupt_in(monkeypatch, op_type, thread_main=True):
    """Make ``op_type``'s kernel deliver a real SIGINT to the process (main thread) or raise
    KeyboardInterrupt (another thread: signals only reach the main thread)."""
    opdef = lookup(op_type)
    real = opdef.kernel
    armed = {"on": True}

    def kernel(ins, attrs, ctx):
        if armed["on"] and (threading.current_thread() is threading.main_thread()) == thread_main:
            armed["on"] = False
            if thread_main:
                os.kill(os.getpid(), signal.SIGINT)
            else:
                raise KeyboardInterrupt
        return real(ins, attrs, ctx)

    monkeypatch.setattr(opdef, "kernel", kernel)
    return armed


def test_ctrl_c_in_a_forward_op_is_a_keyboard_interrupt_and_frees_the_run(monkeypatch):
    exe, loss = _net()
    gc.collect()
    base = memory.memory_allocated()
    armed = _interrupt_in(monkeypatch, "relu")
    for _ in range(3):
        armed["on"] = True        # the cached plan keeps the patched kernel
        with pytest.raises(KeyboardInterrupt):
            exe.run(feed={"x": X}, fetch_list=[loss])
    gc.collect()
    assert memory.memory_allocated() == base
    exe.run(feed={"x": X}, fetch_list=[loss])     # the executor still works
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_inside_an_update_kernel_never_half_writes_a_variable(monkeypatch):
    """A real SIGINT arriving between two NumPy calls of the momentum kernel (the velocity is
    scaled by mu, then the gradient added) must not leave the velocity half-updated: it is held
    until the run ends, so the step's updates are all applied."""
    exe, loss = _net(paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9))
    exe.run(feed={"x": X}, fetch_list=[loss])           # a non-zero velocity
    kernel = lookup("momentum").kernel
    lines, first = inspect.getsourcelines(kernel)
    add_line = first + next(i for i, line in enumerate(lines) if "np.add(velocity, grad" in line)
    seen = {}

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == add_line and "sent" not in seen:
            seen["sent"] = True    # after `velocity *= mu`, before `velocity += grad`
            os.kill(os.getpid(), signal.SIGINT)
        return local

    def trace(frame, event, arg):
        if frame.f_code is not kernel.__code__ or "param" in seen:
            return None
        ins = frame.f_locals["ins"]     # the first momentum op run: its variables, before and after
        seen.update(param=ins["Param"], velocity=ins["Velocity"], p_old=ins["Param"].copy(),
                    v_old=ins["Velocity"].copy())
        return local

    scope = static.global_scope()
    state = [v.name for v in static.default_main_program().list_vars() if v.persistable and "velocity" in v.name]
    state += [p.name for p in static.default_main_program().all_parameters()]
    before = {name: np.array(scope._get_array(name)) for name in state}
    sys.settrace(trace)
    try:
        with pytest.raises(KeyboardInterrupt):
            exe.run(feed={"x": X}, fetch_list=[loss])
    finally:
        sys.settrace(None)
    assert seen.get("sent") and np.abs(seen["v_old"]).max() > 0
    p_new, v_new, p_old, v_old = seen["param"], seen["velocity"], seen["p_old"], seen["v_old"]
    whole = np.allclose(p_new, p_old - np.float32(0.1) * v_new, rtol=0, atol=1e-7) and \
        not np.array_equal(v_new, v_old)
    assert whole, "the momentum update was left half-applied"
    assert len(before) == 8
    for name, value in before.items():      # every update of the step was applied
        assert not np.array_equal(scope._get_array(name), value), name


def test_ctrl_c_in_data_parallel_is_a_keyboard_interrupt(monkeypatch):
    exe, loss = _net(width=16)
    prog = static.CompiledProgram(static.default_main_program()).with_data_parallel(
        loss_name=loss.name, places=static.cpu_places(2))
    for _ in range(2):     # place 1 holds its copy of the parameters
        exe.run(prog, feed={"x": X}, fetch_list=[loss])
    gc.collect()
    base = memory.memory_allocated()
    for thread_main in (True, False):      # SIGINT in place 0, KeyboardInterrupt in place 1's thread
        monkeypatch.undo()
        _interrupt_in(monkeypatch, "relu", thread_main)
        prog._compiled.clear()             # new place programs: new plans with the patched kernel
        with pytest.raises(KeyboardInterrupt):
            exe.run(prog, feed={"x": X}, fetch_list=[loss])
    gc.collect()
    assert memory.memory_allocated() == base
    out, = exe.run(prog, feed={"x": X}, fetch_list=[loss])   # the group still works
    assert out.shape == (2,)
