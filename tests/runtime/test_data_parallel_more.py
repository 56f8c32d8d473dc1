"""More data-parallel cases: share_vars_from, a failing place, CoeffNumDevice on an uneven split.

Reference: paddle_behaviour.md §6.3 (gradient scale, feed split); share_vars_from as the
reference's ``CompiledProgram._compile_data_parallel`` (must be data parallel and already run;
the test program uses the shared program's per-place scopes; the scope argument is ignored).
"""
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import names
from headrace.core.errors import FeedError

from ..passes.dp_nets import batches, conv_bn_fc_net

BS = static.BuildStrategy
TIMEOUT = 10.0   # seconds; a run that takes longer is a hang (the runs here take milliseconds)


def run_with_timeout(fn):
    """Run ``fn`` in a thread; fail the test if it is still running after TIMEOUT."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    if thread.is_alive():
        pytest.fail(f"the data-parallel run did not return within {TIMEOUT} s (a place hangs)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def data_parallel(program, loss=None, places=2, **kwargs):
    return static.CompiledProgram(program).with_data_parallel(
        loss_name=None if loss is None else loss.name, places=static.cpu_places(places), **kwargs)


# --- share_vars_from ------------------------------------------------------------------------------

def fc_net():
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 5
    with static.program_guard(main, startup), names.guard():
        x = static.data("x", [-1, 4], "float32")
        h = static.nn.fc(x, size=6, activation="tanh")
        out = static.nn.fc(h, size=3)
        test = main.clone(for_test=True)
        loss = paddle.mean(out * out)
        paddle.optimizer.Momentum(learning_rate=0.2, momentum=0.5).minimize(loss)
    return main, startup, test, out, loss


@pytest.mark.parametrize("reduce", [False, True], ids=["allreduce", "reduce"])
def test_share_vars_from_sees_the_current_parameters_on_every_place(reduce):
    main, startup, test, out, loss = fc_net()
    bs = BS()
    bs.reduce_strategy = BS.ReduceStrategy.Reduce if reduce else BS.ReduceStrategy.AllReduce
    train = data_parallel(main, loss, build_strategy=bs)
    evaluate = data_parallel(test, share_vars_from=train)
    rng = np.random.default_rng(1)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    with static.scope_guard(scope):
        exe.run(startup)
        previous = None
        for _ in range(3):   # train and evaluate in turn: the evaluation follows every step
            exe.run(train, feed={"x": rng.standard_normal((6, 4)).astype("float32")}, fetch_list=[loss])
            x = rng.standard_normal((5, 4)).astype("float32")
            per_place, = exe.run(evaluate, feed={"x": x}, fetch_list=[out], return_merged=False)
            assert [p.shape for p in per_place] == [(3, 3), (2, 3)]
            # a plain Executor run of the test program on the same scope, slice by slice
            for got, rows in zip(per_place, (x[:3], x[3:])):
                expected, = exe.run(test, feed={"x": rows}, fetch_list=[out])
                np.testing.assert_array_equal(got, expected)
            merged, = exe.run(evaluate, feed={"x": x}, fetch_list=[out])
            np.testing.assert_array_equal(merged, np.concatenate(per_place))
            if previous is not None:   # the parameters did move between evaluations
                assert np.abs(merged - previous).max() > 1e-4
            previous = merged


def test_share_vars_from_reads_each_places_own_state():
    """Without sync_batch_norm each training place keeps its own moving statistics; the shared
    test program's place k reads place k's (the reference shares the local scopes)."""
    with names.guard():
        main, startup, loss = conv_bn_fc_net()
    test = main.clone(for_test=True)
    fetch = test.global_block().ops[-1].output_arg_names[0]   # forward-only clone: the loss
    train = data_parallel(main, loss)
    evaluate = data_parallel(test, share_vars_from=train)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    feed = batches(1, seed=3)[0]
    with static.scope_guard(scope):
        exe.run(startup)
        for step in batches(3):
            exe.run(train, feed=step, fetch_list=[loss])
        per_place, = exe.run(evaluate, feed=feed, fetch_list=[fetch], return_merged=False)
    scopes = train._runner._scopes(scope)
    trainable = {p.name for p in main.all_parameters() if p.trainable}
    moving = [v.name for v in main.list_vars()
              if v.persistable and v.name.startswith("batch_norm") and v.name not in trainable]
    assert moving and any(np.abs(scopes[0]._get_array(n) - scopes[1]._get_array(n)).max() > 1e-5
                          for n in moving)   # the places' statistics differ
    halves = [{k: v[:4] for k, v in feed.items()}, {k: v[4:] for k, v in feed.items()}]
    for k, (got, half) in enumerate(zip(per_place, halves)):
        expected, = exe.run(test, feed=half, fetch_list=[fetch], scope=scopes[k])
        np.testing.assert_array_equal(got, expected, err_msg=f"place {k}")
    other, = exe.run(test, feed=halves[1], fetch_list=[fetch], scope=scopes[0])
    assert np.abs(other - per_place[1]).max() > 1e-6   # place 1 did not use place 0's statistics


def test_share_vars_from_ignores_another_scope_with_a_warning():
    main, startup, test, out, loss = fc_net()
    train = data_parallel(main, loss)
    evaluate = data_parallel(test, share_vars_from=train)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    x = np.linspace(-1, 1, 16, dtype="float32").reshape(4, 4)
    with static.scope_guard(scope):
        exe.run(startup)
        exe.run(train, feed={"x": x}, fetch_list=[loss])
        expected, = exe.run(test, feed={"x": x}, fetch_list=[out])
    with pytest.warns(UserWarning, match="scope passed to Executor.run is ignored"):
        got, = exe.run(evaluate, feed={"x": x}, fetch_list=[out], scope=static.Scope())
    np.testing.assert_array_equal(got, expected)


def test_share_vars_from_errors():
    main, startup, test, out, loss = fc_net()
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    x = np.ones((4, 4), "float32")
    with pytest.raises(TypeError, match="share_vars_from must be a CompiledProgram"):
        data_parallel(test, share_vars_from=main)
    with static.scope_guard(scope):
        exe.run(startup)
        train = data_parallel(main, loss)
        with pytest.raises(ValueError, match="share_vars_from has not been compiled and run"):
            exe.run(data_parallel(test, share_vars_from=train), feed={"x": x}, fetch_list=[out])
        single = static.CompiledProgram(main)
        exe.run(single, feed={"x": x}, fetch_list=[loss])
        with pytest.raises(ValueError, match="share_vars_from is not data parallel"):
            exe.run(data_parallel(test, share_vars_from=single), feed={"x": x}, fetch_list=[out])
        exe.run(train, feed={"x": x}, fetch_list=[loss])
        with pytest.raises(ValueError, match="runs on 2 places, this program on 3"):
            exe.run(data_parallel(test, places=3, share_vars_from=train), feed={"x": x}, fetch_list=[out])
        # after the errors, a correct sharer works
        got, = exe.run(data_parallel(test, share_vars_from=train), feed={"x": x}, fetch_list=[out])
        expected, = exe.run(test, feed={"x": x}, fetch_list=[out])
        np.testing.assert_array_equal(got, expected)


# --- a failing place ------------------------------------------------------------------------------

def reshape_net():
    """reshape(x, [2, 2]) only fits a slice of exactly 2 rows of x[N, 2]: with other slice sizes
    the kernel fails at run time on that place only, while the others wait in the allreduce."""
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 2
    with static.program_guard(main, startup), names.guard():
        x = static.data("x", [-1, 2], "float32")
        y = paddle.reshape(x, [2, 2])
        loss = paddle.mean(static.nn.fc(y, size=3))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def params(main, scope):
    return {v.name: np.array(scope._get_array(v.name)) for v in main.list_vars() if v.persistable}


@pytest.mark.parametrize("places,batch,failing", [(2, 3, 1), (2, 5, 0), (3, 5, 2)])
def test_a_failing_place_raises_naming_it_and_the_program_runs_again(places, batch, failing):
    main, startup, loss = reshape_net()
    prog = data_parallel(main, loss, places=places)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    rng = np.random.default_rng(0)
    with static.scope_guard(scope):
        exe.run(startup)
        good = rng.standard_normal((2 * places, 2)).astype("float32")
        bad = rng.standard_normal((batch, 2)).astype("float32")
        for _ in range(2):   # twice: the group must recover every time
            with pytest.raises(Exception, match=rf"on place {failing} of {places}:.*reshape") as info:
                run_with_timeout(lambda: exe.run(prog, feed={"x": bad}, fetch_list=[loss]))
            assert "BrokenBarrier" not in str(info.value)   # the real error, not a waiter's
        before = params(main, scope)
        losses = run_with_timeout(lambda: exe.run(prog, feed={"x": good}, fetch_list=[loss]))[0]
        after = params(main, scope)
    assert losses.shape == (places,)
    # the good step equals plain Executor steps per slice from the same parameters, averaged
    plain_main, _, plain_loss = reshape_net()
    expected_loss = [exe.run(plain_main, feed={"x": good[2 * k:2 * k + 2]}, fetch_list=[plain_loss],
                             scope=_copy(before))[0] for k in range(places)]
    np.testing.assert_allclose(losses, expected_loss, rtol=1e-6)
    grads = []
    for k in range(places):
        s = _copy(before)
        exe.run(plain_main, feed={"x": good[2 * k:2 * k + 2]}, fetch_list=[plain_loss], scope=s)
        grads.append({n: (before[n] - s._get_array(n)) / 0.1 for n in before})
    for name in before:
        expected = before[name] - 0.1 * np.mean([g[name] for g in grads], axis=0)
        np.testing.assert_allclose(after[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def _copy(values):
    scope = static.Scope()
    for name, value in values.items():
        scope._set_array(name, value.copy())
    return scope


def test_a_bad_feed_for_one_place_names_it_and_the_program_runs_again():
    main, startup, test, out, loss = fc_net()
    prog = data_parallel(main, loss)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    x = np.ones((3, 4), "float32")
    with static.scope_guard(scope):
        exe.run(startup)
        with pytest.raises(FeedError, match=r"on place 1 of 2: feed 'x': expected shape \[-1, 4\], got \[3, 2\]"):
            run_with_timeout(lambda: exe.run(prog, feed=[{"x": x}, {"x": x[:, :2]}], fetch_list=[loss]))
        with pytest.raises(FeedError, match="same names for every place: place 1 feeds"):
            run_with_timeout(lambda: exe.run(prog, feed=[{"x": x}, {}], fetch_list=[loss]))
        per_place = run_with_timeout(lambda: exe.run(prog, feed=[{"x": x}, {"x": 2 * x[:1]}],
                                                     fetch_list=[out], return_merged=False))[0]
    assert [p.shape for p in per_place] == [(3, 3), (1, 3)]
    assert np.isfinite(per_place[1]).all() and np.abs(per_place[1] - per_place[0][:1]).max() > 1e-4


# --- CoeffNumDevice on an uneven split ------------------------------------------------------------

def linear_net():
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 11
    with static.program_guard(main, startup), names.guard():
        x = static.data("x", [-1, 4], "float32")
        y = static.data("y", [-1, 2], "float32")
        pred = static.nn.fc(x, size=2)
        loss = paddle.mean((pred - y) * (pred - y))
        paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def numpy_mean_grads(w, b, x, y):
    """d/dW, d/db of mean((x W + b - y)^2) over the n x 2 elements, in float64."""
    r = x @ w + b - y
    scale = 2.0 / r.size
    return scale * x.T @ r, scale * r.sum(axis=0)


@pytest.mark.parametrize("strategy,weight", [("CoeffNumDevice", 0.5), ("One", 1.0)])
def test_gradient_scale_on_an_uneven_split(strategy, weight):
    """Batch 3 on 2 places -> 2 + 1 rows: each place's loss is the mean over its own rows, so
    CoeffNumDevice gives (g0 + g1) / 2 (not the full-batch mean gradient) and One gives g0 + g1."""
    main, startup, loss = linear_net()
    bs = BS()
    bs.gradient_scale_strategy = getattr(BS.GradientScaleStrategy, strategy)
    prog = data_parallel(main, loss, build_strategy=bs)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype("float32")
    y = rng.standard_normal((3, 2)).astype("float32")
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    w_name, b_name = (p.name for p in main.all_parameters())
    with static.scope_guard(scope):
        exe.run(startup)
        w0, b0 = (np.array(scope._get_array(n), "float64") for n in (w_name, b_name))
        losses, loss_grad = exe.run(prog, feed={"x": x, "y": y}, fetch_list=[loss, loss.name + "@GRAD"],
                                    return_merged=False)
        w1, b1 = (np.array(scope._get_array(n), "float64") for n in (w_name, b_name))
        others = [np.array(s._get_array(n)) for s in prog._runner._scopes(scope)[1:] for n in (w_name, b_name)]
    x64, y64 = x.astype("float64"), y.astype("float64")
    np.testing.assert_allclose([float(v) for v in loss_grad], [weight, weight])
    for got, rows in zip(losses, (slice(0, 2), slice(2, 3))):
        np.testing.assert_allclose(got, np.mean((x64[rows] @ w0 + b0 - y64[rows]) ** 2), rtol=1e-5)
    g0 = numpy_mean_grads(w0, b0, x64[:2], y64[:2])
    g1 = numpy_mean_grads(w0, b0, x64[2:], y64[2:])
    expected_w = w0 - 0.5 * weight * (g0[0] + g1[0])
    expected_b = b0 - 0.5 * weight * (g0[1] + g1[1])
    np.testing.assert_allclose(w1, expected_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, expected_b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(others[0], w1.astype("float32"))   # place 1 applied the same update
    np.testing.assert_array_equal(others[1], b1.astype("float32"))
    full_w = w0 - 0.5 * numpy_mean_grads(w0, b0, x64, y64)[0]
    assert np.abs(expected_w - full_w).max() > 1e-3   # the uneven split is not the full-batch gradient


def test_a_plain_step_between_data_parallel_runs_reaches_every_place():
    main, startup, test, out, loss = fc_net()
    prog = data_parallel(main, loss)
    exe, scope = static.Executor(static.CPUPlace()), static.Scope()
    x = np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4)
    with static.scope_guard(scope):
        exe.run(startup)
        exe.run(prog, feed={"x": x}, fetch_list=[loss])
        exe.run(main, feed={"x": x}, fetch_list=[loss])   # a single-device step on place 0's scope
        per_place, = exe.run(prog, feed=[{"x": x}, {"x": x}], fetch_list=[out], return_merged=False)
    np.testing.assert_array_equal(per_place[1], per_place[0])
