"""Manipulation ops (ops/manip.py): references written with loops or Python lists, gradient checks,
both modes, errors."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(17)


def test_stack_unstack():
    xs = [rng.standard_normal((2, 3)) for _ in range(3)]
    want = np.empty((2, 3, 3))
    for k, x in enumerate(xs):
        want[:, k, :] = x
    case = Case("stack", {"X": xs}, lambda i, a: {"Y": want}, attrs={"axis": 1})
    check_forward(case)
    check_infer_batch(case)
    check_grad("stack", {"X": xs}, {"axis": 1})
    check_both_modes("stack", {"X": xs}, {"axis": 1})
    check_build_error("stack", {"X": [np.zeros((2, 3)), np.zeros((3, 2))]}, {}, ShapeError)
    x = rng.standard_normal((2, 3, 4))
    parts = [x[:, k, :] for k in range(3)]
    check_forward(Case("unstack", {"X": x}, lambda i, a: {"Y": parts}, attrs={"axis": 1, "num": 3},
                       outputs={"Y": 3}))
    check_grad("unstack", {"X": x}, {"axis": 1, "num": 3}, outputs={"Y": 3})


def test_expand_and_tile():
    x = rng.standard_normal((3, 1))
    want = np.array([[[x[i, 0]] * 4 for i in range(3)]] * 2)
    case = Case("expand_v2", {"X": x}, lambda i, a: {"Out": want}, attrs={"shape": [2, -1, 4]}, batch_slots=())
    check_forward(case)
    check_grad("expand_v2", {"X": x}, {"shape": [2, -1, 4]})
    check_both_modes("expand_v2", {"X": x}, {"shape": [2, 3, 4]})
    check_build_error("expand_v2", {"X": np.zeros((3, 2))}, {"shape": [3, 4]}, AttrError)
    y = rng.standard_normal((2, 3))
    tiled = np.concatenate([np.concatenate([y, y], axis=1)] * 3, axis=0)
    check_forward(Case("tile", {"X": y}, lambda i, a: {"Out": tiled}, attrs={"repeat_times": [3, 2]}))
    check_grad("tile", {"X": y}, {"repeat_times": [2, 3, 2]})
    check_both_modes("tile", {"X": y}, {"repeat_times": [2, 1, 3]})


def test_flip_roll_tril_triu():
    x = rng.standard_normal((3, 4))
    flipped = np.array([row[::-1] for row in x[::-1]])
    check_forward(Case("flip", {"X": x}, lambda i, a: {"Out": flipped}, attrs={"axis": [0, 1]}))
    check_grad("flip", {"X": x}, {"axis": [1]})
    check_both_modes("flip", {"X": x}, {"axis": [0]})
    rolled = np.array([[x[i, (j - 1) % 4] for j in range(4)] for i in range(3)])
    check_forward(Case("roll", {"X": x}, lambda i, a: {"Out": rolled}, attrs={"shifts": [1], "axis": [1]}))
    flat = x.ravel().tolist()
    rolled_flat = np.array(flat[-2:] + flat[:-2]).reshape(3, 4)
    check_forward(Case("roll", {"X": x}, lambda i, a: {"Out": rolled_flat}, attrs={"shifts": [2]}))
    check_grad("roll", {"X": x}, {"shifts": [1, -2], "axis": [0, 1]})
    check_both_modes("roll", {"X": x}, {"shifts": [3]})
    for lower, diag in ((True, 0), (True, -1), (False, 1)):
        want = np.array([[x[i, j] if ((j - i <= diag) if lower else (j - i >= diag)) else 0.0 for j in range(4)]
                         for i in range(3)])
        check_forward(Case("tril_triu", {"X": x}, lambda i, a, w=want: {"Out": w},
                           attrs={"lower": lower, "diagonal": diag}))
        check_grad("tril_triu", {"X": x}, {"lower": lower, "diagonal": diag})
    check_both_modes("tril_triu", {"X": x}, {"lower": False})


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(exclusive, reverse):
    x = rng.standard_normal((3, 4))

    def line(values):
        out, total = [], 0.0
        seq = values[::-1] if reverse else values
        for v in seq:
            out.append(total if exclusive else total + v)
            total += v
        return out[::-1] if reverse else out
    want = np.array([line(list(row)) for row in x])
    attrs = {"axis": 1, "exclusive": exclusive, "reverse": reverse}
    check_forward(Case("cumsum", {"X": x}, lambda i, a: {"Out": want}, attrs=attrs, rtol=1e-12))
    check_grad("cumsum", {"X": x}, attrs)
    check_both_modes("cumsum", {"X": x}, attrs)
    flat = np.array(line(list(x.ravel())))
    check_forward(Case("cumsum", {"X": x}, lambda i, a: {"Out": flat}, attrs={**attrs, "flatten": True}, rtol=1e-12))
    check_grad("cumsum", {"X": x}, {**attrs, "flatten": True})


def test_diag_and_diagonal():
    v = rng.standard_normal(3)
    for k in (0, 1, -2):
        n = 3 + abs(k)
        want = np.full((n, n), 7.0)
        for i in range(3):
            r, c = (i, i + k) if k >= 0 else (i - k, i)
            want[r, c] = v[i]
        check_forward(Case("diag_v2", {"X": v}, lambda i, a, w=want: {"Out": w},
                           attrs={"offset": k, "padding_value": 7.0}))
        check_grad("diag_v2", {"X": v}, {"offset": k})
    m = rng.standard_normal((3, 4))
    for k in (0, 1, -1):
        want = np.array([m[i, i + k] for i in range(3) if 0 <= i + k < 4])
        check_forward(Case("diag_v2", {"X": m}, lambda i, a, w=want: {"Out": w}, attrs={"offset": k}))
        check_grad("diag_v2", {"X": m}, {"offset": k})
    check_both_modes("diag_v2", {"X": m}, {"offset": 1})
    t = rng.standard_normal((2, 3, 4))
    want = np.array([[t[b, i, i + 1] for i in range(3) if i + 1 < 4] for b in range(2)])
    attrs = {"offset": 1, "axis1": 1, "axis2": 2}
    check_forward(Case("diagonal", {"Input": t}, lambda i, a: {"Out": want}, attrs=attrs))
    check_grad("diagonal", {"Input": t}, attrs)
    check_both_modes("diagonal", {"Input": t}, attrs)


def test_kron_and_cross():
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    want = np.zeros((4, 6))
    for i in range(2):
        for j in range(3):
            want[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2] = x[i, j] * y
    check_forward(Case("kron", {"X": x, "Y": y}, lambda i, a: {"Out": want}))
    check_grad("kron", {"X": x, "Y": y})
    check_grad("kron", {"X": rng.standard_normal(3), "Y": rng.standard_normal((2, 2))})
    check_both_modes("kron", {"X": x, "Y": y})
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))

    def cross(u, v):
        return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    want = np.array([cross(a[:, j], b[:, j]) for j in range(4)]).T
    check_forward(Case("cross", {"X": a, "Y": b}, lambda i, at: {"Out": want}, attrs={"dim": 0}, batch_slots=()))
    check_grad("cross", {"X": a, "Y": b}, {"dim": 0})
    check_both_modes("cross", {"X": a, "Y": b}, {"dim": 0})
    check_build_error("cross", {"X": np.zeros((2, 4)), "Y": np.zeros((2, 4))}, {"dim": 1}, ShapeError)


def test_linspace_and_eye():
    check_forward(Case("linspace", {}, lambda i, a: {"Out": np.array([0.0, 0.25, 0.5, 0.75, 1.0], np.float32)},
                       attrs={"start": 0.0, "stop": 1.0, "num": 5}))
    want = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], dtype=np.float64)
    check_forward(Case("eye", {}, lambda i, a: {"Out": want}, attrs={"num_rows": 3, "num_columns": 4,
                                                                      "dtype": "float64"}))
    check_both_modes("eye", {}, {"num_rows": 2})
