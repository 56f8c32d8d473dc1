"""Eager deletion and byte accounting: exact expectations computed from the buffer sizes."""
import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.device import cpu
from headrace.runtime import Executor, Scope
from headrace.runtime.memory import MemoryTracker

N = 1000  # floats per activation -> 4000 bytes each
BYTES = 4 * N


def _chain(length):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [N], "float32")
        h = x
        for _ in range(length):
            h = h * 1.5
    return main, h


def _peak_of(program, fetch, feed):
    exe = Executor()
    scope = Scope()
    exe.run(program, feed=feed, fetch_list=[fetch], scope=scope)  # warm the plan
    base = cpu.memory_allocated()
    cpu.reset_max_memory_allocated()
    exe.run(program, feed=feed, fetch_list=[fetch], scope=scope)
    assert cpu.memory_allocated() == base, "a run must release everything it allocated"
    return cpu.max_memory_allocated() - base


def test_a_chain_keeps_two_activations_alive_at_most():
    main, out = _chain(20)
    feed = {"x": np.ones(N, "float32")}
    # the feed plus one input and one output of the running op: three buffers at the peak
    # (the feed dies after op 0, so from then on it is input + output)
    assert _peak_of(main, out, feed) == 2 * BYTES


def test_shape_only_inputs_do_not_keep_data_alive():
    """``fill_any_like`` needs only X's shape, so X's data dies at its last data use."""
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [N], "float32")
        big = x * 2.0                     # op0: x, big
        h = big * 1.0                     # op1: big, h          -> big stripped to its shape
        z = paddle.full([4 * N], 1.0)     # op2: h, z
        c = z * 1.0                       # op3: h, z, c  = 9 N  <- the peak
        c * 1.0                           # op4: h, c, d
        zeros = paddle.ops.apply_op_single("fill_any_like", {"X": big}, {"value": 0.0})
        out = paddle.add(h, zeros)        # op6: h, zeros, out
    peak = _peak_of(main, out, {"x": np.ones(N, "float32")})
    # had big's data been kept until fill_any_like, op3 would hold 10 N
    assert peak == 9 * BYTES


def test_views_count_once_and_release_cleanly():
    tracker = MemoryTracker()
    a = np.zeros(100, "float64")
    view = a[10:20]
    tracker.acquire(a)
    tracker.acquire(view)
    assert tracker.current == 800 and tracker.peak == 800
    tracker.release(a)
    assert tracker.current == 800  # the view still holds the buffer
    tracker.release(view)
    assert tracker.current == 0 and tracker.peak == 800
    tracker.reset_peak()
    assert tracker.peak == 0


def test_parameters_in_scope_are_counted():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        static.create_parameter([250], "float32")
    base = cpu.memory_allocated()
    scope = Scope()
    Executor().run(startup, scope=scope)
    assert cpu.memory_allocated() - base == 1000
    scope.drop_kids()
    scope._drop()
    assert cpu.memory_allocated() == base
