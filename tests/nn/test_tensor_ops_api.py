"""The ``paddle.*`` tensor functions added with the tensor-op families, in both modes: each row runs
the function eagerly on Tensors and in a static program on data variables, and compares both with
a NumPy reference written here (the reference's semantics: argument order, defaults, axis=None,
keepdim, output dtypes)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
import headrace.static as static
from headrace.core import context

rng = np.random.default_rng(29)
M = rng.uniform(-2, 2, (3, 4))
P = rng.uniform(0.2, 0.9, (3, 4))
V = rng.uniform(-2, 2, (4,))
B = rng.uniform(-2, 2, (2, 3, 4))
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 5.0], [0.0, 0.0, 0.0, 0.0]])
I = np.array([2, 0, 2], dtype=np.int64)


def run_both(fn, arrays):
    """(eager results, static results) of ``fn`` on ``arrays``, as lists of ndarrays."""
    def flat(out):
        out = out if isinstance(out, (list, tuple)) else [out]
        return [o for o in out]
    with context.static_mode_guard(False):
        eager = [np.asarray(o.numpy()) for o in flat(fn(*[paddle.to_tensor(a) for a in arrays]))]
    main = static.Program()
    with static.program_guard(main, static.Program()):
        vars_ = [static.data(f"a{k}", list(a.shape), a.dtype.name) for k, a in enumerate(arrays)]
        outs = flat(fn(*vars_))
    got = static.Executor().run(main, feed={f"a{k}": a for k, a in enumerate(arrays)}, fetch_list=outs)
    return eager, [np.asarray(g) for g in got]


def _med(x, axis):
    s = np.sort(x, axis=axis)
    n = x.shape[axis]
    return (np.take(s, (n - 1) // 2, axis) + np.take(s, n // 2, axis)) / 2


ROWS = [
    # id, function, reference, inputs
    ("sin", paddle.sin, np.sin, [M]), ("atan2", paddle.atan2, np.arctan2, [M, P]),
    ("floor_divide", paddle.floor_divide, lambda a, b: np.floor(a / b), [M, P]),
    ("remainder", paddle.remainder, np.mod, [M, P]), ("mod-scalar", lambda a: paddle.mod(a, 0.7),
                                                       lambda a: np.mod(a, 0.7), [M]),
    ("round-decimals", lambda a: paddle.round(a, decimals=1), lambda a: np.round(a, 1), [np.array([0.26, -1.34])]),
    ("logical_xor", lambda a, b: paddle.logical_xor(a > 0, b > 0), lambda a, b: (a > 0) ^ (b > 0), [M, P - 0.5]),
    ("isclose", lambda a, b: paddle.isclose(a, b, atol=0.1), lambda a, b: np.isclose(a, b, atol=0.1), [M, M + 0.05]),
    ("allclose", lambda a, b: paddle.allclose(a, b), lambda a, b: np.array(np.allclose(a, b)), [M, M + 1e-9]),
    ("equal_all", paddle.equal_all, lambda a, b: np.array(False), [M, P]),
    ("argmax-none", paddle.argmax, lambda a: np.array(np.argmax(a)), [TIES]),
    ("argmax-axis-keep", lambda a: paddle.argmax(a, axis=1, keepdim=True), lambda a: np.argmax(a, 1)[:, None], [TIES]),
    ("argmin-axis0", lambda a: paddle.argmin(a, 0), lambda a: np.argmin(a, 0), [TIES]),
    ("argsort-desc", lambda a: paddle.argsort(a, descending=True),
     lambda a: np.argsort(-a, axis=-1, kind="stable"), [TIES]),
    ("sort-axis0", lambda a: paddle.sort(a, axis=0), lambda a: np.sort(a, axis=0), [M]),
    ("topk-default-axis", lambda a: paddle.topk(a, 2),
     lambda a: [np.sort(a, -1)[:, ::-1][:, :2], np.argsort(-a, -1, kind="stable")[:, :2]], [M]),
    ("where-scalar", lambda a: paddle.where(a > 0, a, 0.0), lambda a: np.where(a > 0, a, 0.0), [M]),
    ("nonzero", lambda a: paddle.nonzero(a), lambda a: np.argwhere(a), [TIES]),
    ("nonzero-tuple", lambda a: paddle.nonzero(a, as_tuple=True), lambda a: list(np.nonzero(a)), [TIES]),
    ("masked_select", lambda a: paddle.masked_select(a, a > 0), lambda a: a[a > 0], [M]),
    ("masked_fill", lambda a: paddle.masked_fill(a, a > 0, 9.0), lambda a: np.where(a > 0, 9.0, a), [M]),
    ("unique-counts", lambda a: paddle.unique(a, return_counts=True),
     lambda a: list(np.unique(a, return_counts=True)), [TIES]),
    ("gather-axis1", lambda a, i: paddle.gather(a, i, axis=1), lambda a, i: a[:, i], [M, I]),
    ("index_select", lambda a, i: paddle.index_select(a, i), lambda a, i: a[i], [M, I]),
    ("gather_nd", lambda a, i: paddle.gather_nd(a, i), lambda a, i: a[i[:, 0], i[:, 1]],
     [M, np.array([[0, 1], [2, 3]])]),
    ("scatter", lambda a, i, u: paddle.scatter(a, i, u), lambda a, i, u: _scatter(a, i, u), [M, I, P]),
    ("scatter_nd", lambda i, u: paddle.scatter_nd(i, u, [3, 4]), lambda i, u: _scatter_nd(i, u),
     [np.array([[1, 1], [0, 2], [1, 1]]), np.array([1.0, 2.0, 3.0])]),
    ("take_along_axis", lambda a, i: paddle.take_along_axis(a, i, 1), lambda a, i: np.take_along_axis(a, i, 1),
     [M, np.array([[0], [3], [1]])]),
    ("kthvalue", lambda a: paddle.kthvalue(a, 2), lambda a: [np.sort(a, -1)[:, 1], np.argsort(a, -1)[:, 1]], [M]),
    ("median-even", lambda a: paddle.median(a, axis=1), lambda a: _med(a, 1), [M]),
    ("median-odd-all", paddle.median, lambda a: np.array(np.median(a[:, :3])), [M[:, :3]]),
    ("median-int", paddle.median, lambda a: np.array(5.5, np.float32), [np.arange(12).reshape(3, 4)]),
    ("median-min", lambda a: paddle.median(a, axis=1, mode="min"),
     lambda a: [np.sort(a, 1)[:, 1], np.argsort(a, 1, kind="stable")[:, 1]], [M]),
    ("stack", lambda a, b: paddle.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1), [M, P]),
    ("unstack", lambda a: paddle.unstack(a, axis=1), lambda a: [a[:, k] for k in range(4)], [M]),
    ("unbind", lambda a: paddle.unbind(a), lambda a: list(a), [M]),
    ("expand", lambda a: paddle.expand(a, [2, 3, 4]), lambda a: np.broadcast_to(a, (2, 3, 4)), [V]),
    ("expand_as", lambda a, b: paddle.expand_as(a, b), lambda a, b: np.broadcast_to(a, b.shape), [V, B]),
    ("broadcast_tensors", lambda a, b: paddle.broadcast_tensors([a, b]), lambda a, b: list(np.broadcast_arrays(a, b)),
     [V, M]),
    ("tile", lambda a: paddle.tile(a, [2, 1]), lambda a: np.tile(a, (2, 1)), [M]),
    ("flip", lambda a: paddle.flip(a, 1), lambda a: a[:, ::-1], [M]),
    ("roll-none", lambda a: paddle.roll(a, 3), lambda a: np.roll(a, 3), [M]),
    ("chunk", lambda a: paddle.chunk(a, 2, axis=1), lambda a: [a[:, :2], a[:, 2:]], [M]),
    ("tril", lambda a: paddle.tril(a, -1), lambda a: np.tril(a, -1), [M]),
    ("triu", paddle.triu, np.triu, [M]),
    ("cumsum-none", paddle.cumsum, lambda a: np.cumsum(a), [M]),
    ("cumsum-axis", lambda a: paddle.cumsum(a, axis=0), lambda a: np.cumsum(a, 0), [M]),
    ("diag", paddle.diag, np.diag, [V]), ("diagflat", paddle.diagflat, lambda a: np.diagflat(a), [M[:2, :2]]),
    ("diagonal", lambda a: paddle.diagonal(a, 1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2), [B]),
    ("trace", paddle.trace, lambda a: np.array(np.trace(a)), [M]),
    ("kron", paddle.kron, np.kron, [M[:2, :2], P]),
    ("cross", paddle.cross, lambda a, b: np.cross(a, b, axis=0), [M, P]),
    ("meshgrid", lambda a, b: paddle.meshgrid(a, b), lambda a, b: list(np.meshgrid(a, b, indexing="ij")),
     [V, V[:3]]),
    ("numel", paddle.numel, lambda a: np.array(12, np.int64), [M]),
    ("t", paddle.t, lambda a: a.T, [M]), ("moveaxis", lambda a: paddle.moveaxis(a, 0, 2),
                                          lambda a: np.moveaxis(a, 0, 2), [B]),
    ("swapaxes", lambda a: paddle.swapaxes(a, 0, 2), lambda a: np.swapaxes(a, 0, 2), [B]),
    ("unflatten", lambda a: paddle.unflatten(a, 1, [2, 2]), lambda a: a.reshape(3, 2, 2), [M]),
    ("one_hot", lambda i: F.one_hot(i, 4), lambda i: np.eye(4, dtype=np.float32)[i], [I]),
    ("atleast_2d", paddle.atleast_2d, lambda a: a[None], [V]),
    ("vstack", lambda a, b: paddle.vstack([a, b]), lambda a, b: np.vstack([a, b]), [V, V]),
    ("rot90", paddle.rot90, lambda a: np.rot90(a), [M]),
    ("prod", lambda a: paddle.prod(a, 1), lambda a: np.prod(a, 1), [M]),
    ("logsumexp", paddle.logsumexp, lambda a: np.array(np.log(np.sum(np.exp(a)))), [M]),
    ("amax", lambda a: paddle.amax(a, axis=[0, 1]), lambda a: np.array(np.max(a)), [M]),
    ("all", lambda a: paddle.all(a > -3), lambda a: np.array(True), [M]),
    ("any", lambda a: paddle.any(a > 1.5, axis=1), lambda a: np.any(a > 1.5, 1), [M]),
    ("std", paddle.std, lambda a: np.array(np.std(a, ddof=1)), [M]),
    ("var-axis", lambda a: paddle.var(a, axis=1, unbiased=False), lambda a: np.var(a, 1), [M]),
    ("count_nonzero", lambda a: paddle.count_nonzero(a, axis=1), lambda a: np.count_nonzero(a, 1), [TIES]),
    ("nansum", paddle.nansum, lambda a: np.array(np.nansum(a)), [np.array([1.0, np.nan, 2.0])]),
    ("norm-fro", paddle.norm, lambda a: np.array(np.linalg.norm(a)), [M]),
    ("norm-1-axis", lambda a: paddle.norm(a, p=1, axis=1), lambda a: np.linalg.norm(a, 1, axis=1), [M]),
    ("linalg.norm-inf", lambda a: paddle.linalg.norm(a, p=float("inf")), lambda a: np.array(np.abs(a).max()), [M]),
    ("norm-fro-axes", lambda a: paddle.norm(a, axis=[1, 2]), lambda a: np.linalg.norm(a, axis=(1, 2)), [B]),
    ("dist", paddle.dist, lambda a, b: np.array(np.linalg.norm(a - b)), [M, P]),
    ("dot", paddle.dot, np.dot, [V, V]), ("dot-rows", paddle.dot, lambda a, b: np.sum(a * b, 1), [M, P]),
    ("bmm", paddle.bmm, np.matmul, [B, np.transpose(B, (0, 2, 1))]),
    ("mv", paddle.mv, np.matmul, [M, V]), ("outer", paddle.outer, np.outer, [V, V[:3]]),
    ("inner", paddle.inner, np.inner, [M, P]),
    ("einsum", lambda a, b: paddle.einsum("ij,kj->ik", a, b), lambda a, b: a @ b.T, [M, P]),
    ("addmm", lambda c, a, b: paddle.addmm(c, a, b, beta=0.5, alpha=2.0),
     lambda c, a, b: 0.5 * c + 2.0 * (a @ b), [M[:, :3], M, P.T[:, :3]]),
    ("clip", lambda a: paddle.clip(a, min=-0.5), lambda a: np.clip(a, -0.5, None), [M]),
    ("clamp", lambda a: paddle.clamp(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [M]),
    ("full_like", lambda a: paddle.full_like(a, 2.5), lambda a: np.full_like(a, 2.5), [M]),
    ("linspace", lambda a: paddle.linspace(0, 1, 5) + 0 * paddle.sum(a),
     lambda a: np.linspace(0, 1, 5).astype(np.float32), [np.zeros(1, np.float32)]),
    ("eye", lambda a: paddle.eye(2, 3, dtype="float64") + paddle.sum(a), lambda a: np.eye(2, 3), [np.zeros(1)]),
    ("shape", paddle.shape, lambda a: np.array([2, 3, 4], np.int32), [B]),
    ("rank", paddle.rank, lambda a: np.array(3, np.int32), [B]),
]


def _scatter(a, i, u):
    out = a.copy()
    for k, row in zip(i, u):
        out[k] = row
    return out


def _scatter_nd(i, u):
    out = np.zeros((3, 4))
    for (r, c), v in zip(i, u):
        out[r, c] += v
    return out


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_function_in_both_modes_matches_numpy(row):
    _, fn, ref, arrays = row
    arrays = [np.asarray(a) for a in arrays]
    want = ref(*arrays)
    want = [np.asarray(w) for w in (want if isinstance(want, list) else [want])]
    for mode, got in zip(("eager", "static"), run_both(fn, arrays)):
        assert len(got) == len(want), f"{row[0]} ({mode}): {len(got)} outputs, expected {len(want)}"
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"{row[0]} ({mode}): shape {g.shape}, expected {w.shape}"
            if w.dtype == np.float32:
                assert g.dtype == np.float32, f"{row[0]} ({mode}): dtype {g.dtype}, expected float32"
            if w.dtype.kind in "iub":
                assert g.dtype.kind == w.dtype.kind, f"{row[0]} ({mode}): dtype {g.dtype}"
                np.testing.assert_array_equal(g, w, err_msg=f"{row[0]} ({mode})")
            else:
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=f"{row[0]} ({mode})")


def test_index_outputs_are_int64():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(M)
        for out in (paddle.argmax(x), paddle.argsort(x), paddle.topk(x, 1)[1], paddle.nonzero(x), paddle.numel(x)):
            assert out.dtype == "int64"


def test_random_functions_draw_from_the_seeded_generator():
    with context.static_mode_guard(False):
        paddle.seed(3)
        a = [paddle.randint(0, 10, [20]).numpy(), paddle.randperm(8).numpy(), paddle.rand_like(paddle.ones([3])).numpy(),
             paddle.bernoulli(paddle.full([50], 0.5)).numpy(), paddle.multinomial(paddle.ones([4]), 2).numpy()]
        paddle.seed(3)
        b = [paddle.randint(0, 10, [20]).numpy(), paddle.randperm(8).numpy(), paddle.rand_like(paddle.ones([3])).numpy(),
             paddle.bernoulli(paddle.full([50], 0.5)).numpy(), paddle.multinomial(paddle.ones([4]), 2).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert a[0].dtype == np.int64 and a[0].min() >= 0 and a[0].max() < 10
    assert sorted(a[1].tolist()) == list(range(8))


def test_type_predicates_and_dtype_facts():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.zeros(2, np.float32))
        n = paddle.to_tensor(np.zeros(2, np.int64))
        assert paddle.is_tensor(x) and not paddle.is_tensor(np.zeros(2))
        assert paddle.is_floating_point(x) and not paddle.is_floating_point(n)
        assert paddle.is_integer(n) and not paddle.is_complex(x)
    assert paddle.iinfo(paddle.int32).max == 2**31 - 1 and paddle.iinfo("int8").min == -128
    assert paddle.finfo(paddle.float32).eps == float(np.finfo(np.float32).eps)
    assert paddle.finfo("float64").bits == 64
    assert paddle.float == paddle.float32 and paddle.double == paddle.float64 and paddle.half == "float16"
    assert paddle.get_device() == "cpu" and paddle.set_device("cpu") is not None


def test_unsupported_norms_say_so():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(M)
        with pytest.raises(NotImplementedError, match="nuc"):
            paddle.norm(x, p="nuc")
        with pytest.raises(NotImplementedError, match="not supported"):
            paddle.einsum("ii->i", x[:3, :3])


def test_shape_arguments_may_be_eager_tensors_but_not_static_variables():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(V)
        reps = paddle.to_tensor(np.array([2, 1]))
        np.testing.assert_array_equal(paddle.tile(x, reps).numpy(), np.tile(V, (2, 1)))
        np.testing.assert_array_equal(paddle.expand(x, [paddle.to_tensor(np.array(3)), 4]).numpy(),
                                      np.broadcast_to(V, (3, 4)))
    main = static.Program()
    with static.program_guard(main, static.Program()):
        v = static.data("v", [4], "float64")
        n = static.data("n", [2], "int64")
        with pytest.raises(NotImplementedError, match="static Variable"):
            paddle.tile(v, n)
