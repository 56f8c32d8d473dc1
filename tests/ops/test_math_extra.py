"""More reductions and products (ops/math_extra.py): references written with Python loops / math,
gradient checks (zeros in reduce_prod, ties in amax), both modes, errors."""
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(19)


def _over_axis1(x, fn, dtype=None):
    return np.array([fn([v.item() for v in row]) for row in x], dtype=dtype or x.dtype)


def _lse(values):
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


REDUCTIONS = {"reduce_prod": math.prod, "logsumexp": _lse, "reduce_amax": max, "reduce_amin": min}


@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reductions(op):
    x = rng.uniform(-2, 2, (3, 4))
    want = _over_axis1(x, REDUCTIONS[op])
    case = Case(op, {"X": x}, lambda i, a: {"Out": want}, attrs={"dim": [1]}, rtol=1e-13)
    check_forward(case)
    check_infer_batch(case)
    total = np.array(REDUCTIONS[op]([v.item() for v in x.ravel()]))
    check_forward(Case(op, {"X": x}, lambda i, a: {"Out": total}, attrs={"reduce_all": True}, rtol=1e-13))
    check_grad(op, {"X": x}, {"dim": [1]})
    check_grad(op, {"X": x}, {"dim": [0], "keep_dim": True})
    check_both_modes(op, {"X": x}, {"dim": [1]})


def test_prod_gradient_with_zeros():
    x = rng.uniform(-2, 2, (3, 4))
    x[0, 1] = 0.0
    x[1, 2] = x[1, 3] = 0.0       # two zeros in one group: every partial is 0
    check_grad("reduce_prod", {"X": x}, {"dim": [1]})
    check_grad("reduce_prod", {"X": x}, {"reduce_all": True})


def test_amax_splits_ties_evenly():
    x = np.array([[1.0, 3.0, 3.0, 0.0]])
    check_both_modes("reduce_amax", {"X": x}, {"dim": [1]})
    from headrace.ops.kernel import context
    from headrace.ops.registry import lookup
    grad = lookup("reduce_amax_grad").kernel({"X": x, "Out": np.array([3.0]), "Out@GRAD": np.array([1.0])},
                                             {"dim": [1], "keep_dim": False, "reduce_all": False},
                                             context(["X@GRAD"]))["X@GRAD"]
    np.testing.assert_array_equal(grad, [[0.0, 0.5, 0.5, 0.0]])


@pytest.mark.parametrize("op, fn", [("reduce_all", all), ("reduce_any", any)])
def test_all_any(op, fn):
    x = rng.integers(0, 2, (3, 4)).astype(np.int32)
    want = np.array([fn(row) for row in x.tolist()])
    check_forward(Case(op, {"X": x}, lambda i, a: {"Out": want}, attrs={"dim": [1]}))
    check_both_modes(op, {"X": x}, {"reduce_all": True})


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf"), float("-inf"), 0.0])
def test_p_norm(p):
    x = rng.uniform(-2, 2, (3, 4))

    def norm(values):
        a = [abs(v) for v in values]
        if p == math.inf:
            return max(a)
        if p == -math.inf:
            return min(a)
        if p == 0:
            return float(sum(1 for v in a if v != 0))
        return sum(v ** p for v in a) ** (1 / p)
    want = _over_axis1(x, norm)
    check_forward(Case("p_norm", {"X": x}, lambda i, a: {"Out": want}, attrs={"porder": p, "axis": 1}, rtol=1e-13))
    whole = np.array(norm([v.item() for v in x.ravel()]))
    check_forward(Case("p_norm", {"X": x}, lambda i, a: {"Out": whole}, attrs={"porder": p, "asvector": True},
                       rtol=1e-13))
    check_grad("p_norm", {"X": x}, {"porder": p, "axis": 1})
    check_grad("p_norm", {"X": x}, {"porder": p, "axis": 0, "keepdim": True})
    check_both_modes("p_norm", {"X": x}, {"porder": p, "asvector": True})


def test_p_norm_of_zeros_has_zero_gradient():
    from headrace.ops.kernel import context
    from headrace.ops.registry import lookup
    x = np.zeros((2, 3))
    grad = lookup("p_norm_grad").kernel({"X": x, "Out": np.zeros(2), "Out@GRAD": np.ones(2)},
                                        {"porder": 2.0, "axis": 1, "keepdim": False, "asvector": False},
                                        context(["X@GRAD"]))["X@GRAD"]
    np.testing.assert_array_equal(grad, np.zeros((2, 3)))


def test_dot():
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    want = np.array([sum(a * b for a, b in zip(r, s)) for r, s in zip(x.tolist(), y.tolist())])
    check_forward(Case("dot", {"X": x, "Y": y}, lambda i, a: {"Out": want}, rtol=1e-13))
    check_forward(Case("dot", {"X": x[0], "Y": y[0]}, lambda i, a: {"Out": np.array(want[0])}, rtol=1e-13))
    check_grad("dot", {"X": x, "Y": y})
    check_grad("dot", {"X": x[0], "Y": y[0]})
    check_both_modes("dot", {"X": x, "Y": y})
    check_build_error("dot", {"X": x, "Y": y.T}, {}, ShapeError)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij,ij->i", [(2, 3), (2, 3)]), ("ijk,k->ij", [(2, 3, 4), (4,)]),
    ("ij,kj", [(2, 3), (4, 3)]), ("abc,cd->ad", [(2, 3, 4), (4, 5)]),
]


def _einsum_ref(equation, ops):
    """Loop over every assignment of the subscripts (explicit sums)."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if "->" not in equation:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes = {}
    for t, op in zip(terms, ops):
        sizes.update(zip(t, op.shape))
    letters = sorted(sizes)
    out = np.zeros([sizes[c] for c in rhs])
    for combo in np.ndindex(*[sizes[c] for c in letters]):
        env = dict(zip(letters, combo))
        term = 1.0
        for t, op in zip(terms, ops):
            term *= op[tuple(env[c] for c in t)]
        out[tuple(env[c] for c in rhs)] += term
    return out


@pytest.mark.parametrize("equation, shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(equation, shapes):
    ops = [rng.standard_normal(s) for s in shapes]
    want = _einsum_ref(equation, ops)
    check_forward(Case("einsum", {"Operands": ops}, lambda i, a: {"Out": want}, attrs={"equation": equation},
                       rtol=1e-12, atol=1e-12))
    check_grad("einsum", {"Operands": ops}, {"equation": equation}, batch_unknown=False)
    check_both_modes("einsum", {"Operands": ops}, {"equation": equation})


@pytest.mark.parametrize("equation, count", [("ii->i", 1), ("...ij,jk->...ik", 2), ("ij,jk,kl->il", 3)])
def test_einsum_unsupported_equations_say_so(equation, count):
    from headrace.ops.math_extra import parse_einsum
    with pytest.raises(NotImplementedError, match="not supported"):
        parse_einsum(equation, count)


def test_einsum_mismatch_is_an_error():
    check_build_error("einsum", {"Operands": [np.zeros((2, 3)), np.zeros((4, 5))]}, {"equation": "ij,jk->ik"},
                      ShapeError, match="subscript")
    check_build_error("einsum", {"Operands": [np.zeros((2, 3))]}, {"equation": "ij,jk->ik"}, AttrError)


def _polygamma_ref(v, n):
    """(-1)^(n+1) n! sum_k 1/(v+k)^(n+1): 2000 terms, then the Euler-Maclaurin tail."""
    terms = math.fsum(1.0 / (v + k) ** (n + 1) for k in range(2000))
    a = v + 2000
    tail = 1.0 / (n * a ** n) + 1.0 / (2 * a ** (n + 1)) + (n + 1) / (12 * a ** (n + 2))
    return (-1) ** (n + 1) * math.factorial(n) * (terms + tail)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma(n):
    x = rng.uniform(0.2, 6.0, (2, 3))
    want = np.vectorize(lambda v: _polygamma_ref(v, n))(x)
    check_forward(Case("polygamma", {"X": x}, lambda i, a: {"Out": want}, attrs={"n": n}, rtol=1e-10))
    check_grad("polygamma", {"X": x}, {"n": n}, rtol=1e-5)
    check_both_modes("polygamma", {"X": x}, {"n": n})


def test_polygamma_zero_is_digamma_and_bad_order():
    x = rng.uniform(0.5, 4.0, (3,))
    want = np.array([(math.lgamma(v + 1e-5) - math.lgamma(v - 1e-5)) / 2e-5 for v in x])
    check_forward(Case("polygamma", {"X": x}, lambda i, a: {"Out": want}, attrs={"n": 0}, rtol=1e-7))
    check_grad("polygamma", {"X": x}, {"n": 0}, rtol=1e-5)
    check_build_error("polygamma", {"X": x}, {"n": -1}, AttrError)
