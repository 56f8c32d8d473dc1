"""``reshape_tensor``/``slice_tensor`` (shapes held by tensors) and the random ops of
ops/random_more.py: forward, gradients, both modes; random draws from the seeded generators."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, build_and_run, check_build_error, check_infer_batch

rng = np.random.default_rng(23)


def test_reshape_tensor():
    x = rng.standard_normal((2, 3, 4))
    shape = np.array([0, -1, 2], dtype=np.int64)
    want = x.reshape(2, 6, 2)
    case = Case("reshape_tensor", {"X": x, "ShapeTensor": shape}, lambda i, a: {"Out": want}, batch_slots=("X",))
    check_infer_batch(case)
    check_grad("reshape_tensor", {"X": x, "ShapeTensor": shape}, batch_unknown=False)
    check_both_modes("reshape_tensor", {"X": x, "ShapeTensor": shape})
    bad = Case("reshape_tensor", {"X": x, "ShapeTensor": np.array([5, -1])}, lambda i, a: {})
    with pytest.raises(ValueError, match="reshape_tensor"):
        build_and_run(bad)


def test_slice_tensor():
    x = rng.standard_normal((4, 5))
    starts, ends = np.array([1, -3], np.int32), np.array([3, 100], np.int32)
    want = x[1:3, -3:]
    case = Case("slice_tensor", {"Input": x, "StartsTensor": starts, "EndsTensor": ends},
                lambda i, a: {"Out": want}, attrs={"axes": [0, 1]}, batch_slots=("Input",))
    check_infer_batch(case)
    inputs = {"Input": x, "StartsTensor": starts, "EndsTensor": ends}
    check_grad("slice_tensor", inputs, {"axes": [0, 1]}, batch_unknown=False)
    check_both_modes("slice_tensor", inputs, {"axes": [0, 1]})
    check_build_error("slice_tensor", {"Input": x, "StartsTensor": starts, "EndsTensor": np.array([1])},
                      {"axes": [0, 1]}, ShapeError)


def test_paddle_reshape_and_slice_with_variables_in_static_mode():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [-1, 6], "float64")
        n = static.data("n", [1], "int64")
        s = static.data("s", [1], "int32")
        y = paddle.reshape(x, [n, -1])              # a tensor entry in the list
        z = paddle.reshape(x, paddle.concat([n, n * 0 + 3]))   # the whole shape as a tensor
        w = paddle.slice(x, axes=[1], starts=[s], ends=[s + 2])
        assert y.shape[1] == -1 and len(w.shape) == 2
    a = rng.standard_normal((4, 6))
    got = static.Executor().run(main, feed={"x": a, "n": np.array([8]), "s": np.array([2], np.int32)},
                                fetch_list=[y, z, w])
    np.testing.assert_array_equal(got[0], a.reshape(8, 3))
    np.testing.assert_array_equal(got[1], a.reshape(8, 3))
    np.testing.assert_array_equal(got[2], a[:, 2:4])


def test_paddle_reshape_and_slice_with_tensors_in_eager_mode():
    from headrace.core import context
    with context.static_mode_guard(False):
        a = rng.standard_normal((4, 6))
        x = paddle.to_tensor(a)
        y = paddle.reshape(x, [paddle.to_tensor(np.array([3])), -1])
        np.testing.assert_array_equal(y.numpy(), a.reshape(3, 8))
        w = paddle.slice(x, [0], paddle.to_tensor(np.array([1])), [3])
        np.testing.assert_array_equal(w.numpy(), a[1:3])


@pytest.mark.parametrize("op, attrs, inputs", [
    ("randint", {"low": -3, "high": 5, "shape": [400]}, {}),
    ("randperm", {"n": 50}, {}),
    ("bernoulli", {}, {"X": np.full((400,), 0.3)}),
    ("poisson", {}, {"X": np.full((400,), 2.0)}),
    ("multinomial", {"num_samples": 3}, {"X": np.array([[0.1, 0.0, 0.9, 0.5], [1.0, 1.0, 0.0, 2.0]])}),
])
def test_random_ops_are_reproducible_and_in_range(op, attrs, inputs):
    case = Case(op, inputs, lambda i, a: {}, attrs=attrs, seed=5)
    _, first = build_and_run(case)
    _, again = build_and_run(case)
    out = first["Out"][0]
    np.testing.assert_array_equal(out, again["Out"][0])      # the program's seed replays the draws
    if op == "randint":
        assert out.min() >= -3 and out.max() < 5 and len(set(out.tolist())) == 8
    elif op == "randperm":
        assert sorted(out.tolist()) == list(range(50))
    elif op == "bernoulli":
        assert set(out.tolist()) <= {0.0, 1.0} and 0.2 < out.mean() < 0.4
    elif op == "poisson":
        assert 1.7 < out.mean() < 2.3 and np.all(out == np.round(out))
    else:
        assert out.shape == (2, 3) and all(len(set(r)) == 3 for r in out.tolist())   # no repeats
        assert 1 not in out[0] and 2 not in out[1]                                     # weight 0: never


def test_multinomial_without_replacement_needs_enough_categories():
    from headrace.core.errors import AttrError
    check_build_error("multinomial", {"X": np.ones((2, 3))}, {"num_samples": 4}, AttrError)


def test_standard_gamma_and_binomial_ops():
    case = Case("standard_gamma", {"X": np.full((500,), 3.0)}, lambda i, a: {}, seed=2)
    _, out = build_and_run(case)
    g = out["Out"][0]
    assert g.min() > 0 and abs(g.mean() - 3.0) < 0.3
    _, again = build_and_run(case)
    np.testing.assert_array_equal(g, again["Out"][0])
    case = Case("binomial", {"Count": np.full((500,), 4.0), "Prob": np.full((500,), 0.5)}, lambda i, a: {}, seed=2)
    _, out = build_and_run(case)
    b = out["Out"][0]
    assert b.dtype == np.int64 and b.min() >= 0 and b.max() <= 4 and abs(b.mean() - 2.0) < 0.2
    check_build_error("binomial", {"Count": np.ones(3), "Prob": np.ones(4)}, {}, ShapeError)
