"""Issue 15 item 10: fuzzing.  Generated feeds (dtypes, shapes, NaN/Inf, extreme values, Python
lists and scalars, non-contiguous and read-only arrays) and corrupted program dicts.  Property:
a typed headrace error or the correct result; never another exception type, never a hang (each
example runs under a time limit).  Hypothesis runs derandomized with the suite's "ci" profile
(tests/conftest.py: no database, no deadline) and a bounded number of examples."""
import contextlib
import copy
import math
import signal

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import headrace as paddle
import headrace.static as static
from headrace.core.errors import HeadraceError, NonFiniteError
from headrace.core.program import Program

LIMIT_S = 20


@contextlib.contextmanager
def time_limit(seconds=LIMIT_S):
    def expired(signum, frame):
        raise AssertionError(f"no result within {seconds} s: a hang?")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


VAR_DTYPES = ["float32", "float64", "int32", "int64"]
ARRAY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.uint64,
                np.bool_, np.complex64]


def _arrays():
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    return st.sampled_from(ARRAY_DTYPES).flatmap(lambda dt: hnp.arrays(dt, shapes, elements=(
        st.floats(width=np.dtype(dt).itemsize * 8 if np.dtype(dt).kind == "f" else 64, allow_nan=True,
                  allow_infinity=True) if np.dtype(dt).kind == "f" else None)))


def _layout(arr, how):
    """The array as generated, or a non-contiguous or read-only version of it."""
    if how == "strided" and arr.ndim:
        big = np.repeat(arr, 2, axis=0)
        arr = big[::2]
    elif how == "transposed" and arr.ndim >= 2:
        arr = np.ascontiguousarray(np.swapaxes(arr, 0, 1)).swapaxes(0, 1)
    elif how == "readonly":
        arr = arr.copy()
        arr.flags.writeable = False
    return arr


_extreme_ints = st.sampled_from([0, 1, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 31, 3_000_000_000, 2 ** 63 - 1, 2 ** 63,
                                 -2 ** 63, -2 ** 63 - 1, 2 ** 64, 2 ** 70])
_extreme_floats = st.sampled_from([0.0, -0.0, 1.5, 1e-45, 3.4e38, 3.5e38, 1e40, 1e308, math.inf, -math.inf,
                                   math.nan])
_python_values = st.recursive(
    st.one_of(_extreme_ints, _extreme_floats, st.booleans(), st.none(), st.text(max_size=2)),
    lambda kids: st.lists(kids, max_size=3), max_leaves=8)


@st.composite
def feeds(draw):
    if draw(st.booleans()):
        arr = draw(_arrays())
        return _layout(arr, draw(st.sampled_from(["plain", "strided", "transposed", "readonly"])))
    return draw(_python_values)


def _program(var_dtype):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [-1, 3], var_dtype)
        y = paddle.scale(paddle.cast(x, "float64") if var_dtype.startswith("int") else x, scale=2.0)
    return main, y


def _expected(value, var_dtype):
    arr = np.asarray(value).astype(var_dtype)
    return arr.astype("float64") * 2 if var_dtype.startswith("int") else arr * arr.dtype.type(2)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(var_dtype=st.sampled_from(VAR_DTYPES), value=feeds())
def test_any_feed_is_a_typed_error_or_the_right_result(var_dtype, value):
    main, y = _program(var_dtype)
    before = copy.deepcopy(value) if not isinstance(value, np.ndarray) else value.copy()
    try:
        with time_limit():
            out, = static.Executor().run(main, feed={"x": value}, fetch_list=[y], scope=static.Scope())
    except HeadraceError:
        return
    np.testing.assert_array_equal(out, _expected(value, var_dtype))
    if isinstance(value, np.ndarray):
        np.testing.assert_array_equal(value, before)       # the feed is not modified


def _train_program():
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 1
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 3], "float32")
        label = static.data("label", [-1, 1], "float32")
        loss = paddle.mean(paddle.square(static.nn.fc(x, size=1) - label))
        paddle.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup, loss


@settings(max_examples=40)
@given(x=hnp.arrays(np.float32, st.tuples(st.integers(0, 5), st.just(3)),
                    elements=st.floats(width=32, allow_nan=True, allow_infinity=True)),
       label_rows=st.integers(0, 5), check=st.booleans(), parallel=st.booleans())
def test_training_on_any_float_batch_is_a_typed_error_or_a_result(x, label_rows, check, parallel):
    """With FLAGS_check_nan_inf on, a result is all finite (else NonFiniteError); batch sizes that
    broadcast (1 row against n) run, as in the reference; others are FeedErrors."""
    main, startup, loss = _train_program()
    label = np.zeros((label_rows, 1), "float32")
    old = paddle.get_flags("FLAGS_check_nan_inf")
    paddle.set_flags({"FLAGS_check_nan_inf": check})
    scope, exe = static.Scope(), static.Executor()
    prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2)) \
        if parallel else main
    try:
        with time_limit():
            exe.run(startup, scope=scope)
            out, = exe.run(prog, feed={"x": x, "label": label}, fetch_list=[loss], scope=scope)
    except NonFiniteError:
        assert check
        return
    except HeadraceError:
        return
    finally:
        paddle.set_flags(old)
    if check:
        assert np.isfinite(out).all()
        params = [scope._get_array(p.name) for p in main.all_parameters()]
        assert all(np.isfinite(p).all() for p in params)


# --- corrupted program dicts ---------------------------------------------------------------------
_SPEC = []


def _spec():
    """(the training program's dict, its startup program, the loss name), made once."""
    if not _SPEC:
        main, startup, loss = _train_program()
        _SPEC.append((main.to_dict(), startup, loss.name))
    return _SPEC[0]


def _paths(node, prefix=()):
    """Every (path, value) inside a nested dict/list spec."""
    yield prefix, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, prefix + (i,))


_junk = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2 ** 70, 1e308, math.nan]), st.text(max_size=4),
                  st.sampled_from(["float32", "no_such_op", "x", "fc_0.w_0", "mean_0.tmp_0"]),
                  st.lists(st.integers(-1, 3), max_size=3), st.just({}), st.just([]))


@st.composite
def corruptions(draw):
    spec, _, _ = _spec()
    paths = [p for p, _ in _paths(spec) if p]
    path = draw(st.sampled_from(paths))
    action = draw(st.sampled_from(["replace", "delete"]))
    return path, action, (draw(_junk) if action == "replace" else None)


def _corrupt(spec, path, action, junk):
    spec = copy.deepcopy(spec)
    parent = spec
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk
    return spec


@settings(max_examples=150, phases=(Phase.explicit, Phase.generate))   # no shrinking: bounded time
@given(corruption=corruptions())
def test_a_corrupted_program_dict_is_a_typed_error_or_runs(corruption):
    spec, startup, loss_name = _spec()
    bad = _corrupt(spec, *corruption)
    scope, exe = static.Scope(), static.Executor()
    feed = {"x": np.ones((2, 3), "float32"), "label": np.zeros((2, 1), "float32")}
    try:
        with time_limit():
            program = Program.from_dict(bad)
            exe.run(startup, scope=scope)
            exe.run(program, feed=feed, fetch_list=[], scope=scope)
    except HeadraceError:
        pass

