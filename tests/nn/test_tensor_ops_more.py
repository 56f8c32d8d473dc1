"""The functions of nn/tensor_extra.py and nn/tensor_misc.py in both modes against NumPy references
written here, gradients of the composites that write (index_add, put_along_axis, diag_embed ...)
against central differences, and the eager-only helpers."""
import math

import numpy as np
import pytest

import headrace as paddle
from headrace.core import context
from tests.nn.test_tensor_ops_api import run_both

rng = np.random.default_rng(43)
M = rng.standard_normal((3, 4))
P = rng.uniform(0.5, 2.0, (3, 4))
V = rng.standard_normal(4)
B = rng.standard_normal((2, 3, 4))
SORTED = np.array([1.0, 2.0, 4.0, 8.0])
I = np.array([2, 0, 2], dtype=np.int64)


def _index_add(x, i, v):
    out = x.copy()
    for k, row in zip(i, v.T):
        out[:, k] += row
    return out


def _put(x, i, v):
    out = x.copy()
    for r in range(i.shape[0]):
        for c in range(i.shape[1]):
            out[r, i[r, c]] = v[r, c]
    return out


ROWS = [
    ("cumprod", lambda a: paddle.cumprod(a, dim=1), lambda a: np.cumprod(a, 1), [M]),
    ("cumprod-flat", paddle.cumprod, lambda a: np.cumprod(a), [M]),
    ("cummax", lambda a: paddle.cummax(a, axis=1)[0], lambda a: np.maximum.accumulate(a, 1), [M]),
    ("cummin", lambda a: paddle.cummin(a, axis=0)[0], lambda a: np.minimum.accumulate(a, 0), [M]),
    ("logcumsumexp", lambda a: paddle.logcumsumexp(a, axis=1), lambda a: np.logaddexp.accumulate(a, 1), [M]),
    ("searchsorted", paddle.searchsorted, lambda s, v: np.searchsorted(s, v), [SORTED, V * 4]),
    ("bucketize", lambda v, s: paddle.bucketize(v, s, right=True), lambda v, s: np.searchsorted(s, v, "right"),
     [np.array([2.0, 3.0, 9.0]), SORTED]),
    ("bincount", lambda x: paddle.bincount(x, minlength=4), lambda x: np.bincount(x, minlength=4), [I]),
    ("histogram", lambda x: paddle.histogram(x, bins=3, min=-2, max=2),
     lambda x: np.histogram(x, 3, (-2, 2))[0], [M]),
    ("diff", lambda a: paddle.diff(a, n=2, axis=1), lambda a: np.diff(a, 2, axis=1), [M]),
    ("diff-prepend", lambda a, p: paddle.diff(a, prepend=p), lambda a, p: np.diff(a, prepend=p), [M, M[:, :1]]),
    ("index_add", lambda a, i, v: paddle.index_add(a, i, 1, v), _index_add, [M, I, rng.standard_normal((3, 3))]),
    ("index_fill", lambda a, i: paddle.index_fill(a, i, 1, -1.0),
     lambda a, i: np.where(np.isin(np.arange(4), i)[None, :], -1.0, a), [M, I]),
    ("select_scatter", lambda a, v: paddle.select_scatter(a, v, 0, 1),
     lambda a, v: np.vstack([a[:1], v[None], a[2:]]), [M, V]),
    ("slice_scatter", lambda a, v: paddle.slice_scatter(a, v, axes=[1], starts=[0], ends=[4], strides=[2]),
     lambda a, v: _set(a, np.s_[:, 0:4:2], v), [M, rng.standard_normal((3, 2))]),
    ("put_along_axis", lambda a, i, v: paddle.put_along_axis(a, i, v, 1), _put,
     [M, np.array([[0, 2], [3, 3], [1, 0]]), rng.standard_normal((3, 2))]),
    ("put_along_axis-add", lambda a, i: paddle.put_along_axis(a, i, 1.0, 1, reduce="add"),
     lambda a, i: a + np.array([[1, 0, 1, 0], [0, 0, 0, 2], [1, 1, 0, 0]]), [M, np.array([[0, 2], [3, 3], [1, 0]])]),
    ("take", lambda a, i: paddle.take(a, i), lambda a, i: a.ravel()[i], [M, np.array([[0, -1], [5, 11]])]),
    ("repeat_interleave", lambda a: paddle.repeat_interleave(a, 2, axis=1), lambda a: np.repeat(a, 2, 1), [M]),
    ("tensor_split", lambda a: paddle.tensor_split(a, 3, axis=1), lambda a: np.array_split(a, 3, axis=1), [M]),
    ("hsplit", lambda a: paddle.hsplit(a, [1, 3]), lambda a: np.hsplit(a, [1, 3]), [M]),
    ("vsplit", lambda a: paddle.vsplit(a, 3), lambda a: np.vsplit(a, 3), [M]),
    ("dsplit", lambda a: paddle.dsplit(a, 2), lambda a: np.dsplit(a, 2), [B]),
    ("column_stack", lambda a, b: paddle.column_stack([a, b]), lambda a, b: np.column_stack([a, b]), [V, V]),
    ("row_stack", lambda a, b: paddle.row_stack([a, b]), lambda a, b: np.vstack([a, b]), [V, V]),
    ("dstack", lambda a, b: paddle.dstack([a, b]), lambda a, b: np.dstack([a, b]), [M, M]),
    ("tril_indices", lambda a: paddle.tril_indices(3, 4, 1) + paddle.cast(paddle.sum(a), "int64") * 0,
     lambda a: np.stack(np.tril_indices(3, 1, 4)), [np.zeros(1)]),
    ("triu_indices", lambda a: paddle.triu_indices(3) + paddle.cast(paddle.sum(a), "int64") * 0,
     lambda a: np.stack(np.triu_indices(3)), [np.zeros(1)]),
    ("isin", lambda a, b: paddle.isin(a, b), np.isin, [np.array([[1, 2], [3, 4]]), np.array([4, 1, 9])]),
    ("isposinf", paddle.isposinf, np.isposinf, [np.array([np.inf, -np.inf, 1.0])]),
    ("isneginf", paddle.isneginf, np.isneginf, [np.array([np.inf, -np.inf, 1.0])]),
    ("isreal", paddle.isreal, lambda a: np.ones(a.shape, bool), [M]),
    ("lerp", lambda a, b: paddle.lerp(a, b, 0.25), lambda a, b: a + 0.25 * (b - a), [M, P]),
    ("lerp-tensor", paddle.lerp, lambda a, b, w: a + w * (b - a), [M, P, P / 3]),
    ("positive", paddle.positive, lambda a: a, [M]),
    ("ldexp", paddle.ldexp, lambda a, b: np.ldexp(a, b), [M, np.array([1, -1, 3, 0])]),
    ("sinc", paddle.sinc, np.sinc, [np.array([0.0, 0.5, -1.5, 2.0])]),
    ("quantile", lambda a: paddle.quantile(a, 0.3, axis=1), lambda a: np.quantile(a, 0.3, axis=1), [M]),
    ("quantile-list", lambda a: paddle.quantile(a, [0.0, 0.5, 1.0]), lambda a: np.quantile(a, [0.0, 0.5, 1.0]), [M]),
    ("tensordot", lambda a, b: paddle.tensordot(a, b, axes=1), lambda a, b: np.tensordot(a, b, 1), [M, P.T]),
    ("tensordot-lists", lambda a, b: paddle.tensordot(a, b, axes=[[0, 2], [1, 0]]),
     lambda a, b: np.tensordot(a, b, [[0, 2], [1, 0]]), [B, rng.standard_normal((4, 2, 5))]),
    ("cdist", paddle.cdist, lambda a, b: np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)), [M, P]),
    ("block_diag", lambda a, b: paddle.block_diag([a, b]), lambda a, b: _block(a, b), [M[:2, :2], P[:1]]),
    ("cartesian_prod", lambda a, b: paddle.cartesian_prod([a, b]),
     lambda a, b: np.array([[x, y] for x in a for y in b]), [V[:2], V[:3]]),
    ("trapezoid", lambda y: paddle.trapezoid(y, dx=0.5), lambda y: _trap(y, 0.5), [M]),
    ("cumulative_trapezoid", paddle.cumulative_trapezoid,
     lambda y: np.cumsum((y[:, 1:] + y[:, :-1]) / 2, axis=1), [M]),
    ("crop", lambda a: paddle.crop(a, [2, -1], [1, 1]), lambda a: a[1:3, 1:], [M]),
    ("narrow", lambda a: paddle.narrow(a, 1, 1, 2), lambda a: a[:, 1:3], [M]),
    ("strided_slice", lambda a: paddle.strided_slice(a, [1], [3], [0], [-2]), lambda a: a[:, 3:0:-2], [M]),
    ("view_as", paddle.view_as, lambda a, b: a.reshape(b.shape), [M, M.reshape(6, 2)]),
    ("reduce_as", paddle.reduce_as, lambda a, b: a.sum(0).sum(0, keepdims=True), [B, np.zeros((1, 4))]),
    ("increment", paddle.increment, lambda a: a + 1, [M]),
    ("ravel", paddle.ravel, np.ravel, [M]), ("vecdot", paddle.vecdot, lambda a, b: (a * b).sum(-1), [M, P]),
    ("ger", paddle.ger, np.outer, [V, V[:2]]),
    ("baddbmm", lambda c, a, b: paddle.baddbmm(c, a, b, beta=2.0, alpha=0.5),
     lambda c, a, b: 2 * c + 0.5 * (a @ b), [B[:, :, :3], B, np.transpose(B, (0, 2, 1))[:, :, :3].copy()]),
    ("diag_embed", lambda a: paddle.diag_embed(a, -1), lambda a: np.stack([np.diag(r, -1) for r in a]), [M]),
    ("diagonal_scatter", lambda a, v: paddle.diagonal_scatter(a, v, 1), lambda a, v: _diag_set(a, v), [M, V[:3]]),
    ("vander", paddle.vander, lambda a: np.vander(a), [V]),
    ("index_put", lambda a, i, j, v: paddle.index_put(a, (i, j), v), lambda a, i, j, v: _set(a, (i, j), v),
     [M, np.array([0, 2]), np.array([3, 1]), np.array([5.0, 6.0])]),
    ("index_put-acc", lambda a, i, v: paddle.index_put(a, (i,), v, accumulate=True),
     lambda a, i, v: a + np.array([[0.0] * 4, [0.0] * 4, [2.0] * 4]) * 1.0, [M, np.array([2, 2]), np.ones(4)]),
]


def _set(a, index, v):
    out = a.copy()
    out[index] = v
    return out


def _block(a, b):
    out = np.zeros((a.shape[0] + b.shape[0], a.shape[1] + b.shape[1]))
    out[:a.shape[0], :a.shape[1]] = a
    out[a.shape[0]:, a.shape[1]:] = b
    return out


def _trap(y, dx):
    return np.sum((y[:, 1:] + y[:, :-1]) / 2, axis=1) * dx


def _diag_set(a, v):
    out = a.copy()
    for i in range(3):
        out[i, i + 1] = v[i]
    return out


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_function_in_both_modes_matches_numpy(row):
    _, fn, ref, arrays = row
    arrays = [np.asarray(a) for a in arrays]
    want = ref(*arrays)
    want = [np.asarray(w) for w in (want if isinstance(want, list) else [want])]
    for mode, got in zip(("eager", "static"), run_both(fn, arrays)):
        assert len(got) == len(want), f"{row[0]} ({mode})"
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"{row[0]} ({mode}): shape {g.shape}, expected {w.shape}"
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{row[0]} ({mode})")


def _fd(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        p, m = a.copy(), a.copy()
        p[idx] += eps
        m[idx] -= eps
        g[idx] = (f(p) - f(m)) / (2 * eps)
    return g


GRAD_ROWS = [
    ("index_add", lambda x, v: paddle.index_add(x, paddle.to_tensor(I), 1, v), (3, 4), (3, 3)),
    ("put_along_axis", lambda x, v: paddle.put_along_axis(x, paddle.to_tensor(np.array([[0], [3], [3]])), v, 1),
     (3, 4), (3, 1)),
    ("diag_embed", lambda x, v: paddle.diag_embed(x * v), (2, 3), (2, 3)),
    ("quantile", lambda x, v: paddle.quantile(x * v, [0.2, 0.7], axis=1), (3, 4), (3, 4)),
    ("cdist", lambda x, v: paddle.cdist(x, v), (3, 4), (2, 4)),
    ("lerp", lambda x, v: paddle.lerp(x, v, v), (3, 4), (3, 4)),
    ("cumprod", lambda x, v: paddle.cumprod(x * v, dim=0), (3, 4), (3, 4)),
    ("logcumsumexp", lambda x, v: paddle.logcumsumexp(x + v), (3, 4), (3, 4)),
]


@pytest.mark.parametrize("name, fn, xs, vs", GRAD_ROWS, ids=[r[0] for r in GRAD_ROWS])
def test_composite_gradients_match_finite_differences(name, fn, xs, vs):
    a, b = rng.uniform(0.3, 1.5, xs), rng.uniform(0.3, 1.5, vs)
    with context.static_mode_guard(False):
        w = None

        def value(x, v):
            out = fn(paddle.to_tensor(x), paddle.to_tensor(v)).numpy()
            return float(np.sum(out * w))
        probe = fn(paddle.to_tensor(a), paddle.to_tensor(b))
        w = rng.standard_normal(probe.shape)
        x, v = paddle.to_tensor(a, stop_gradient=False), paddle.to_tensor(b, stop_gradient=False)
        (fn(x, v) * paddle.to_tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), _fd(lambda t: value(t, b), a), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(v.grad.numpy(), _fd(lambda t: value(a, t), b), rtol=1e-6, atol=1e-8)


def test_eager_helpers():
    with context.static_mode_guard(False):
        t = paddle.from_numpy(np.arange(3, dtype=np.int32))
        assert t.dtype == "int32" and paddle.asarray([1.5]).dtype == "float32"
        assert paddle.as_tensor(np.ones(2)).dtype == "float64"
        x = paddle.to_tensor(np.ones(2), stop_gradient=False)
        with paddle.set_grad_enabled(False):
            assert (x * 2).stop_gradient
        assert not (x * 2).stop_gradient
        paddle.manual_seed(4)
        a = paddle.rand([3]).numpy()
        paddle.seed(4)
        np.testing.assert_array_equal(a, paddle.rand([3]).numpy())
        r = paddle.repeat_interleave(paddle.to_tensor(np.array([1.0, 2.0])), paddle.to_tensor(np.array([2, 1])))
        assert r.numpy().tolist() == [1.0, 1.0, 2.0]
        ln = paddle.log_normal(0.0, 0.1, [2000]).numpy()
        assert ln.min() > 0 and abs(np.log(ln).mean()) < 0.02
        cond = paddle.to_tensor(np.array([True, False]))
        y = paddle.to_tensor(np.array([1.0, 2.0]))
        assert paddle.where_(cond, y, paddle.to_tensor(np.array([7.0, 8.0]))) is y
        assert y.numpy().tolist() == [1.0, 8.0] and y.inplace_version == 1
    assert paddle.get_default_dtype() == "float32" and math.isclose(paddle.pi, math.pi)


def test_unsupported_options_say_so():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(M)
        with pytest.raises(NotImplementedError, match="interpolation"):
            paddle.quantile(x, 0.5, interpolation="nearest")
        with pytest.raises(NotImplementedError, match="reduce"):
            paddle.put_along_axis(x, paddle.to_tensor(np.zeros((3, 1), np.int64)), 1.0, 1, reduce="mul")
        with pytest.raises(NotImplementedError, match="density"):
            paddle.histogram(x, density=True)


def _multigammaln(a, p):
    return np.vectorize(lambda v: p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(v - j / 2) for j in range(p)))(a)


def _renorm(a, p, axis, max_norm):
    out = a.copy()
    for i in range(a.shape[axis]):
        piece = np.take(a, i, axis)
        norm = np.sum(np.abs(piece) ** p) ** (1 / p)
        if norm > max_norm:
            idx = [slice(None)] * a.ndim
            idx[axis] = i
            out[tuple(idx)] = piece * (max_norm / (norm + 1e-7))
    return out


def _masked_scatter(a, m, v):
    out, k = a.copy(), 0
    for idx in np.ndindex(a.shape):
        if m[idx]:
            out[idx] = v.ravel()[k]
            k += 1
    return out


MORE_ROWS = [
    ("multigammaln", lambda a: paddle.multigammaln(a, 3), lambda a: _multigammaln(a, 3), [P + 1.5]),
    ("renorm", lambda a: paddle.renorm(a, 2.0, 1, 1.0), lambda a: _renorm(a, 2.0, 1, 1.0), [M]),
    ("masked_scatter", lambda a, v: paddle.masked_scatter(a, a > 0, v), lambda a, v: _masked_scatter(a, a > 0, v),
     [M, np.arange(12.0)]),
    ("pdist", paddle.pdist, lambda a: np.array([np.linalg.norm(a[i] - a[j]) for i in range(3) for j in range(i + 1, 3)]),
     [M]),
    ("combinations", paddle.combinations, lambda a: np.array([[a[i], a[j]] for i in range(4) for j in range(i + 1, 4)]),
     [V]),
    ("combinations-repl", lambda a: paddle.combinations(a[:3], 2, with_replacement=True),
     lambda a: np.array([[a[i], a[j]] for i in range(3) for j in range(i, 3)]), [V]),
    ("histogram_bin_edges", lambda a: paddle.histogram_bin_edges(a, bins=4),
     lambda a: np.histogram_bin_edges(a, 4).astype(np.float64), [M]),
    ("multiplex", lambda a, b, i: paddle.multiplex([a, b], i), lambda a, b, i: np.where(i == 0, a, b),
     [M, P, np.array([[1], [0], [1]])]),
    ("shard_index", lambda a: paddle.shard_index(a, 20, 2, 1), lambda a: np.where(a // 10 == 1, a % 10, -1),
     [np.array([[1], [12], [19], [5]])]),
    ("softmax", paddle.softmax, lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True), [M]),
]


@pytest.mark.parametrize("row", MORE_ROWS, ids=[r[0] for r in MORE_ROWS])
def test_more_functions_in_both_modes(row):
    test_function_in_both_modes_matches_numpy(row)


def test_random_draws_and_refills():
    with context.static_mode_guard(False):
        paddle.seed(9)
        g = paddle.standard_gamma(paddle.full([3000], 2.0, "float64")).numpy()
        assert g.min() > 0 and abs(g.mean() - 2.0) < 0.15
        b = paddle.binomial(paddle.full([3000], 10.0, "float64"), paddle.full([3000], 0.3, "float64")).numpy()
        assert b.dtype == np.int64 and b.min() >= 0 and b.max() <= 10 and abs(b.mean() - 3.0) < 0.15
        x = paddle.zeros([3000], "float64")
        assert paddle.bernoulli_(x, 0.25) is x and set(np.unique(x.numpy())) <= {0.0, 1.0}
        assert abs(x.numpy().mean() - 0.25) < 0.04
        x.cauchy_(1.0, 0.5)
        assert abs(np.median(x.numpy()) - 1.0) < 0.1
        paddle.geometric_(x, 0.5)
        v = x.numpy()
        assert v.min() >= 1 and np.all(v == np.round(v)) and abs(v.mean() - 2.0) < 0.15 and x.inplace_version == 3
        paddle.seed(9)
        np.testing.assert_array_equal(paddle.standard_gamma(paddle.full([3000], 2.0, "float64")).numpy(), g)


def test_multigammaln_and_renorm_gradients():
    GRAD_ROWS_EXTRA = [("multigammaln", lambda x, v: paddle.multigammaln(x + v + 1.0, 2), (2, 3), (2, 3)),
                       ("renorm", lambda x, v: paddle.renorm(x * v, 2.0, 0, 0.5), (3, 4), (3, 4)),
                       ("masked_scatter", lambda x, v: paddle.masked_scatter(x, x > 1.0, v), (3, 4), (12,)),
                       ("pdist", lambda x, v: paddle.pdist(x * v), (3, 4), (3, 4))]
    for name, fn, xs, vs in GRAD_ROWS_EXTRA:
        test_composite_gradients_match_finite_differences(name, fn, xs, vs)


NAN = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, 1.0, 2.0, 8.0]])


@pytest.mark.parametrize("row", [
    ("nanmedian", lambda a: paddle.nanmedian(a, axis=1), lambda a: np.array([2.0, np.nan, 3.0]), [NAN]),
    ("nanmedian-all", paddle.nanmedian, lambda a: np.array(2.0), [NAN]),
    ("nanquantile", lambda a: paddle.nanquantile(a, [0.3, 0.9], axis=1, keepdim=True),
     lambda a: np.array([[[1.6], [np.nan], [1.9]], [[2.8], [np.nan], [6.8]]]), [NAN]),
], ids=["nanmedian", "nanmedian-all", "nanquantile"])
def test_nan_statistics_in_both_modes(row):
    _, fn, ref, arrays = row
    want = ref(*arrays)
    for got in run_both(fn, arrays):
        np.testing.assert_allclose(got[0], want, rtol=1e-12)


def test_nanmedian_gradient():
    a = rng.standard_normal((3, 5))
    a[0, 1] = a[2, 4] = np.nan
    w = rng.standard_normal(3)
    with context.static_mode_guard(False):
        x = paddle.to_tensor(a, stop_gradient=False)
        (paddle.nanmedian(x, axis=1) * paddle.to_tensor(w)).sum().backward()
    want = np.zeros_like(a)
    for r in range(3):
        valid = [c for c in range(5) if not np.isnan(a[r, c])]
        order = sorted(valid, key=lambda c: a[r, c])
        mid = (len(order) - 1) / 2
        for k in {int(np.floor(mid)), int(np.ceil(mid))}:
            want[r, order[k]] += w[r] / len({int(np.floor(mid)), int(np.ceil(mid))})
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_unique_consecutive_in_both_modes():
    a = np.array([[2.0, 2.0], [3.0, 2.0]])
    want = [np.array([2.0, 3.0, 2.0]), np.array([0, 0, 1, 2]), np.array([2, 1, 1])]
    for got in run_both(lambda t: paddle.unique_consecutive(t, return_inverse=True, return_counts=True), [a]):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_mode_function():
    a = np.array([[1, 2, 2], [4, 4, 1]], dtype=np.int64)
    for got in run_both(lambda t: paddle.mode(t, axis=1, keepdim=True), [a]):
        np.testing.assert_array_equal(got[0], [[2], [4]])
        np.testing.assert_array_equal(got[1], [[2], [1]])
