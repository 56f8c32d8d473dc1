"""ops/parallel.py: pieces of one kernel on several threads give the bits of one whole call."""
from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

import headrace as paddle
from headrace.core import flags
from headrace.ops import parallel


@pytest.fixture
def threads():
    """Set FLAGS_paddle_num_threads for one test (tests run with OMP_NUM_THREADS=1)."""
    old = paddle.get_flags("FLAGS_paddle_num_threads")

    def set_count(count):
        paddle.set_flags({"FLAGS_paddle_num_threads": count})
    yield set_count
    paddle.set_flags(old)


def _softmax_rows(x, out):
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)


RNG = np.random.default_rng(7)
CASES = [  # (name, fn, input arrays, output shape/dtype, keep)
    ("exp flat, odd size", np.exp, [RNG.standard_normal(10007).astype(np.float32)], None, 0),
    ("tanh 3-D odd", np.tanh, [RNG.standard_normal((5, 33, 17)).astype(np.float32)], None, 0),
    ("float64 sin", np.sin, [RNG.standard_normal((3, 1001))], None, 0),
    ("bias add", np.add, [RNG.standard_normal((7, 13, 29)).astype(np.float32),
                          RNG.standard_normal(29).astype(np.float32)], (7, 13, 29), 0),
    ("column bias mul", np.multiply, [RNG.standard_normal((9, 1, 31)), RNG.standard_normal((9, 5, 1))],
     (9, 5, 31), 0),
    ("transposed input", np.negative, [RNG.standard_normal((40, 23)).T], None, 0),
    ("row softmax", _softmax_rows, [RNG.standard_normal((11, 3, 257)).astype(np.float32)], None, 1),
    ("softmax over two axes", lambda x, out: np.divide(x, x.sum(axis=(-2, -1), keepdims=True), out=out),
     [RNG.standard_normal((6, 7, 9)).astype(np.float32)], None, 2),
]


def _run(fn, ins, shape, keep, min_elements):
    ref = ins[0]
    out = np.empty(shape or ref.shape, np.result_type(*ins))
    return parallel.chunked(fn, out, *ins, keep=keep, min_elements=min_elements)


@pytest.mark.parametrize("name, fn, ins, shape, keep", CASES, ids=[c[0] for c in CASES])
def test_pieces_give_the_bits_of_one_whole_call(threads, name, fn, ins, shape, keep):
    whole = np.empty(shape or ins[0].shape, np.result_type(*ins))
    fn(*ins, whole)
    for count in (1, 2, 3):
        threads(count)
        for min_elements in (1, 100, parallel.MIN_ELEMENTS):
            got = _run(fn, ins, shape, keep, min_elements)
            np.testing.assert_array_equal(got, whole, strict=True)
            assert got.tobytes() == whole.tobytes()


def test_several_threads_really_run_the_pieces(threads):
    threads(3)
    seen = set()

    def record(x, out):
        seen.add(threading.get_ident())
        time.sleep(0.01)   # slow pieces: the workers wake up before the caller has taken them all
        np.copyto(out, x)
    x = np.arange(3000.0)
    out = parallel.chunked(record, np.empty_like(x), x, min_elements=1)
    np.testing.assert_array_equal(out, x)
    assert threading.get_ident() in seen and len(seen) >= 2


def test_a_worker_without_a_core_leaves_its_pieces_to_the_caller(threads):
    """Pieces are taken one at a time: when the pool's workers cannot run (here: all stuck in
    another job), the caller runs every piece and returns; nothing waits for the stuck worker."""
    threads(2)
    parallel._pool.ensure(1)
    release = threading.Event()

    class Stuck:
        def work(self):
            release.wait(10)
    for _ in parallel._pool.workers:   # every worker (earlier tests may have started more) takes one
        parallel._pool.jobs.put(Stuck())
    try:
        seen = []
        x = np.arange(5000.0)
        out = parallel.chunked(lambda a, o: (seen.append(threading.get_ident()), np.copyto(o, a * 2)),
                               np.empty_like(x), x, min_elements=100)
        np.testing.assert_array_equal(out, x * 2)
        assert len(seen) == parallel.PIECES_PER_THREAD * 2 and set(seen) == {threading.get_ident()}
    finally:
        release.set()


def test_small_arrays_and_one_thread_run_in_one_call(threads):
    calls = []

    def record(x, out):
        calls.append(x.shape)
        np.copyto(out, x)
    threads(4)
    x = np.ones(parallel.MIN_ELEMENTS * 2 - 1)
    parallel.chunked(record, np.empty_like(x), x)
    assert calls == [x.shape]        # two pieces would each be below min_elements
    threads(1)
    calls.clear()
    y = np.ones(parallel.MIN_ELEMENTS * 8)
    parallel.chunked(record, np.empty_like(y), y)
    assert calls == [y.shape]
    threads(4)
    calls.clear()
    parallel.chunked(record, np.empty(0), np.empty(0), min_elements=1)
    parallel.chunked(record, np.empty(()), np.ones(()), min_elements=1)
    assert calls == [(0,), ()]


def test_leading_axes_that_cannot_be_split_keep_the_call_whole(threads):
    threads(2)
    calls = []

    def record(x, out):
        calls.append(x.shape)
        np.copyto(out, x)
    x = np.ones((1, 10000))
    parallel.chunked(record, np.empty_like(x), x, keep=1, min_elements=1)
    assert calls == [(1, 10000)]


def test_an_error_in_a_piece_is_raised_in_the_caller_after_all_pieces(threads):
    threads(3)
    finished = []

    def fail_from_2000_on(x, out):
        if x[0] >= 2000:
            raise ZeroDivisionError(f"piece starting at {x[0]}")
        np.copyto(out, x)
        finished.append(x[0])
    x = np.arange(3000.0)
    with pytest.raises(ZeroDivisionError, match="piece starting at 2"):
        parallel.chunked(fail_from_2000_on, np.empty_like(x), x, min_elements=1)
    assert sorted(finished) == [256.0 * i for i in range(8)]   # 12 pieces of 256: 8 below 2000
    # the pool is free again and works
    np.testing.assert_array_equal(parallel.chunked(np.negative, np.empty_like(x), x, min_elements=1), -x)


def test_the_callers_own_error_wins_and_is_raised(threads):
    threads(2)

    def fail_everywhere(x, out):
        raise ValueError(f"bad piece {x[0]}")
    x = np.arange(1000.0)
    with pytest.raises(ValueError, match="bad piece 0.0"):
        parallel.chunked(fail_everywhere, np.empty_like(x), x, min_elements=1)


def test_nested_calls_run_serially_and_give_the_same_bits(threads):
    threads(2)
    x = RNG.standard_normal((8, 4096))

    def inner(rows, out):
        for r, o in zip(rows, out):
            parallel.chunked(np.exp, o, r, min_elements=1)
    got = parallel.chunked(inner, np.empty_like(x), x, keep=1, min_elements=1)
    np.testing.assert_array_equal(got, np.exp(x), strict=True)


def test_kernels_called_from_several_threads_at_once(threads):
    threads(2)
    xs = [RNG.standard_normal(20000) + i for i in range(6)]
    results = [None] * len(xs)

    def work(i):
        for _ in range(20):
            results[i] = parallel.chunked(np.tanh, np.empty_like(xs[i]), xs[i], min_elements=1)
    workers = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for x, got in zip(xs, results):
        np.testing.assert_array_equal(got, np.tanh(x), strict=True)


def _child(conn):
    paddle.set_flags({"FLAGS_paddle_num_threads": 2})
    x = np.arange(5000.0)
    conn.send(parallel.chunked(np.sqrt, np.empty_like(x), x, min_elements=1))
    conn.close()


def test_a_forked_child_gets_a_working_pool(threads):
    threads(2)
    x = np.arange(5000.0)
    parallel.chunked(np.sqrt, np.empty_like(x), x, min_elements=1)   # the parent's pool exists
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send,))
    child.start()
    send.close()
    assert receive.poll(60), "the forked child did not answer (deadlocked pool?)"
    np.testing.assert_array_equal(receive.recv(), np.sqrt(x), strict=True)
    child.join(60)
    assert child.exitcode == 0


@pytest.mark.parametrize("value", [0, -1, "two", 2.5, True, None, 257, 10 ** 6])
def test_the_thread_flag_refuses_what_is_not_a_count(value):
    """Neither a non-count nor a count above 256 (each thread is a pool worker: a mistyped huge
    value would start that many threads at the first large kernel)."""
    with pytest.raises(ValueError, match="FLAGS_paddle_num_threads: expected a thread count .*from 1 to 256"):
        paddle.set_flags({"FLAGS_paddle_num_threads": value})
    assert paddle.get_flags("FLAGS_paddle_num_threads")["FLAGS_paddle_num_threads"] <= 256


def test_the_thread_flag_takes_256():
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        paddle.set_flags({"FLAGS_paddle_num_threads": 256})
        assert parallel.num_threads() == 256
    finally:
        paddle.set_flags(old)


def test_the_thread_flag_round_trips(threads):
    threads("3")
    assert paddle.get_flags("FLAGS_paddle_num_threads") == {"FLAGS_paddle_num_threads": 3}
    assert parallel.num_threads() == 3


@pytest.mark.parametrize("env, expected", [
    ({"OMP_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "", "OPENBLAS_NUM_THREADS": "2"}, 2),
    ({"MKL_NUM_THREADS": "64"}, 8),
    ({"OMP_NUM_THREADS": "4,2"}, 4),
    ({"OMP_NUM_THREADS": "x"}, None),
])
def test_the_default_thread_count_follows_the_blas_setting(monkeypatch, env, expected):
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("os.cpu_count", lambda: 5)
    assert flags.default_num_threads() == (expected or 5)


def _overflow_off_the_main_thread(x, out):
    """exp overflows in the pieces a pool worker runs; the caller's pieces only copy."""
    if threading.current_thread() is threading.main_thread():
        np.copyto(out, x)
        time.sleep(0.01)   # leave pieces to the worker
    else:
        np.exp(x, out=out)


def test_pieces_on_workers_obey_the_callers_floating_point_error_state(threads):
    """np.errstate is per thread: the pool's workers run under the caller's, so an overflow
    raises (or stays silent) as it would in one thread, whichever thread runs the piece."""
    threads(2)
    x = np.full(4096, 1000.0)
    ran = []

    def record(x, out):
        ran.append(threading.current_thread() is threading.main_thread())
        _overflow_off_the_main_thread(x, out)
    with pytest.raises(FloatingPointError, match="overflow"):
        with np.errstate(over="raise"):
            parallel.chunked(record, np.empty_like(x), x, min_elements=1)
    assert not all(ran), "no piece ran on a worker"
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            parallel.chunked(_overflow_off_the_main_thread, np.empty_like(x), x, min_elements=1)


def test_an_interrupt_while_waiting_for_the_workers_is_raised_after_every_piece(threads):
    """Ctrl-C while the caller waits for a worker's piece: the KeyboardInterrupt is raised once
    that piece has finished, never while a worker still writes the outputs (a handler saving a
    checkpoint would read half-written arrays)."""
    import signal
    threads(2)
    x = np.arange(4096.0)
    out = np.zeros_like(x)
    started, worker_done = threading.Event(), threading.Event()

    def slow_on_the_worker(x, out):
        if threading.current_thread() is threading.main_thread():
            started.wait(10)   # the worker holds a piece before the caller runs out of them
            np.copyto(out, x)
            return
        started.set()
        time.sleep(0.2)    # the caller has finished its pieces and waits for this one
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(0.3)
        np.copyto(out, x)
        worker_done.set()
    with pytest.raises(KeyboardInterrupt):
        parallel.chunked(slow_on_the_worker, out, x, min_elements=1)
        time.sleep(1)   # (should the kernel return before the signal, it arrives here)
    assert worker_done.is_set(), "the caller raised while a worker was still writing"
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(parallel.chunked(np.negative, np.empty_like(x), x, min_elements=1), -x)


def test_the_pool_keeps_no_array_alive_after_the_call_returns(threads):
    """A batch the workers have not taken from the queue yet (here: all busy elsewhere) keeps no
    piece, function or error of a call that returned: its arrays are freed when the caller drops
    them (the memory tracker counts buffers freed without a release by their weak references)."""
    import gc
    import weakref
    threads(2)
    parallel._pool.ensure(1)
    release = threading.Event()

    class Busy:
        def work(self):
            release.wait(10)
    for _ in parallel._pool.workers:
        parallel._pool.jobs.put(Busy())
    try:
        x = np.arange(5000.0)
        out = parallel.chunked(np.negative, np.empty_like(x), x, min_elements=100)
        np.testing.assert_array_equal(out, -x)

        def fail(a, o):
            raise ValueError("bad piece")
        with pytest.raises(ValueError):
            parallel.chunked(fail, np.empty_like(x), x, min_elements=100)
        gone = [weakref.ref(x), weakref.ref(out)]
        del x, out
        gc.collect()
        assert [ref() is None for ref in gone] == [True, True], "a queued batch keeps the arrays alive"
    finally:
        release.set()


def _a_worker_runs_a_piece(x):
    """Whether a pool worker takes a piece of a kernel (the caller's pieces wait up to 10 s for
    one to)."""
    on_worker = threading.Event()

    def piece(x, out):
        if threading.current_thread() is threading.main_thread():
            on_worker.wait(10)
        else:
            on_worker.set()
    parallel.chunked(piece, np.empty_like(x), x, min_elements=1)
    return on_worker.is_set()


def _takes_one_piece_then_interrupted(original):
    """A ``_Batch.run`` whose caller (the main thread) is interrupted after its first piece, as a
    Ctrl-C arriving between two pieces (outside every piece's own error handling) is."""
    def run(batch):
        if threading.current_thread() is not threading.main_thread():
            return original(batch)
        index = next(batch.taken)
        batch.fn(*batch.pieces[index])
        if next(batch.finished) == batch.last:
            batch.done.release()
        raise KeyboardInterrupt
    return run


def test_an_interrupt_between_two_pieces_is_raised_once_no_worker_writes(threads, monkeypatch):
    """Ctrl-C in the caller between two of its pieces: the pieces not taken yet are cancelled,
    and the KeyboardInterrupt comes only once no worker is inside a piece (none writes the
    outputs afterwards); the pool is free again afterwards."""
    threads(2)
    x = np.arange(8192.0)
    out = np.zeros_like(x)
    writers = []

    def slow_copy(x, out):
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.05)
        np.copyto(out, x)
        writers.append(threading.current_thread().name)
    monkeypatch.setattr(parallel._Batch, "run", _takes_one_piece_then_interrupted(parallel._Batch.run))
    with pytest.raises(KeyboardInterrupt):
        parallel.chunked(slow_copy, out, x, min_elements=1)
    at_raise, count = out.copy(), len(writers)
    time.sleep(0.2)
    np.testing.assert_array_equal(out, at_raise)   # nothing written after the call raised
    assert len(writers) == count and "MainThread" in writers
    assert count < parallel.PIECES_PER_THREAD * 2   # the rest was cancelled
    monkeypatch.undo()
    assert not parallel.pool_taken()
    assert _a_worker_runs_a_piece(x), "the pool was left taken"


def test_an_interrupt_right_after_taking_the_pool_releases_it(threads, monkeypatch):
    """Ctrl-C between taking the pool and queueing the pieces (nothing runs yet): the
    KeyboardInterrupt propagates and the pool is free for the next kernel, which would otherwise
    run serially for the rest of the process."""
    threads(2)
    x = np.arange(8192.0)

    def interrupted(self, fn, pieces):
        raise KeyboardInterrupt
    monkeypatch.setattr(parallel._Batch, "__init__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        parallel.chunked(np.negative, np.empty_like(x), x, min_elements=1)
    monkeypatch.undo()
    assert not parallel.pool_taken()
    assert _a_worker_runs_a_piece(x)


def _outcome_within_10_s(caller, piece, x):
    """``chunked(piece, ...)`` over ``x`` in a thread of its own (its ident in ``caller``):
    "returned", "interrupted" (KeyboardInterrupt) or "hung" (still running after 10 s)."""
    outcome = []

    def call():
        caller["ident"] = threading.get_ident()
        try:
            parallel.chunked(piece, np.empty_like(x), x, min_elements=1)
            outcome.append("returned")
        except KeyboardInterrupt:
            outcome.append("interrupted")
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(10)
    return "hung" if thread.is_alive() else outcome[0]


def test_an_interrupt_that_costs_the_caller_a_taken_piece_does_not_hang(threads, monkeypatch):
    """Ctrl-C right after the caller took a piece's index, before running it (or after its last
    piece, before it set ``done``): nobody will run that piece, so the call must not wait for
    it; it cancels the rest and raises once the workers are out."""
    threads(2)
    x = np.arange(8192.0)
    caller = {}

    def run(batch, original=parallel._Batch.run):
        if threading.get_ident() != caller.get("ident"):
            return original(batch)
        next(batch.taken)          # the index is taken; the interrupt comes before its piece runs
        raise KeyboardInterrupt
    monkeypatch.setattr(parallel._Batch, "run", run)
    outcome = _outcome_within_10_s(caller, lambda x, out: np.copyto(out, x), x)
    assert outcome != "hung", "the call hung waiting for a piece nobody runs"
    assert outcome == "interrupted"
    monkeypatch.undo()
    assert not parallel.pool_taken()
    assert _a_worker_runs_a_piece(x)


def test_a_pool_taken_by_a_call_that_is_gone_is_free(threads):
    """A call that took the pool and ended without freeing it (a Ctrl-C between taking it and
    its ``try``) leaves a dead token: the next call runs on the workers; a live holder (another
    kernel running) makes the next call serial."""
    import weakref
    threads(2)
    x = np.arange(8192.0)
    assert parallel._take_pool(weakref.ref(parallel._Token()))   # its token dies at once
    assert not parallel.pool_taken()
    assert _a_worker_runs_a_piece(x)
    holder = parallel._Token()
    assert parallel._take_pool(weakref.ref(holder))
    names = []
    parallel.chunked(lambda x, out: names.append(threading.current_thread().name), np.empty_like(x), x,
                     min_elements=1)
    assert set(names) == {"MainThread"}
    parallel._free_pool(parallel._holder[0])
    assert not parallel.pool_taken()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_thread_that_died_is_replaced(threads):
    """A pool thread that ended (an error escaping a job) is replaced on the next call, which
    would otherwise count it and hand its pieces to nobody but the caller."""
    threads(2)
    parallel._pool.ensure(1)
    died = threading.Event()

    class Fatal:
        def work(self):
            died.set()
            raise RuntimeError("a job's error ends the worker thread")
    for _ in parallel._pool.workers:
        parallel._pool.jobs.put(Fatal())
    assert died.wait(10)
    time.sleep(0.05)
    assert _a_worker_runs_a_piece(np.arange(8192.0))


def test_an_interrupt_right_after_the_wait_succeeded_does_not_wait_again(threads, monkeypatch):
    """Ctrl-C at the check right after the caller's wait for the last piece returned: the caller
    holds the lock the last piece released, so waiting on it again would never end."""
    threads(2)
    x = np.arange(8192.0)

    allocate, caller = parallel._allocate_lock, {}

    class InterruptedAfterAcquire:
        def __init__(self):
            self.lock, self.raised = allocate(), False

        def acquire(self):
            self.lock.acquire()
            if not self.raised and threading.get_ident() == caller.get("ident"):
                self.raised = True
                raise KeyboardInterrupt

        def release(self):
            self.lock.release()
    monkeypatch.setattr(parallel, "_allocate_lock", InterruptedAfterAcquire)

    def slow_on_the_worker(x, out):
        if threading.get_ident() != caller["ident"]:
            time.sleep(0.05)   # the caller runs out of pieces and waits
        np.copyto(out, x)
    outcome = _outcome_within_10_s(caller, slow_on_the_worker, x)
    assert outcome != "hung", "the call waited again for a lock it held"
    assert outcome == "interrupted"


def test_an_interrupt_inside_a_piece_wins_over_a_lower_pieces_error(threads):
    """Ctrl-C inside piece 3 while piece 1 fails too: the call raises the KeyboardInterrupt (a
    training loop catching piece 1's error would otherwise go on after the user's Ctrl-C)."""
    threads(2)

    def piece(i):
        if i == 1:
            raise FloatingPointError("overflow in piece 1")
        if i == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        parallel.run_pieces(piece, [(i,) for i in range(8)])


def test_a_failed_call_keeps_no_array_alive_once_its_error_is_handled(threads):
    """No reference cycle through the caller's frame: with the cyclic collector off, the arrays
    of a call whose piece failed are freed when the handler drops the exception."""
    import gc
    import weakref
    threads(2)
    x = np.arange(8192.0)
    seen = weakref.ref(x)

    def failing(x, out):
        raise ValueError("a piece failed")
    gc.disable()
    try:
        try:
            parallel.chunked(failing, np.empty_like(x), x, min_elements=1)
        except ValueError:
            pass
        del x
        assert seen() is None
    finally:
        gc.enable()


def test_a_worker_added_but_never_started_is_replaced(threads):
    """A Ctrl-C between adding a worker to the pool and starting it leaves a thread that never
    runs: the next call replaces it instead of counting it."""
    threads(3)
    parallel._pool.ensure(1)
    del parallel._pool.workers[1:]
    parallel._pool.workers.append(threading.Thread(target=lambda: None))   # never started
    names, both = set(), threading.Event()

    def piece(x, out):
        if threading.current_thread() is not threading.main_thread():
            names.add(threading.current_thread().name)
            if len(names) == 2:
                both.set()
        both.wait(5)   # each piece waits until two workers are running pieces
    x = np.arange(8192.0)
    parallel.chunked(piece, np.empty_like(x), x, min_elements=1)
    assert len(names) == 2, f"workers that ran pieces: {sorted(names)}"
