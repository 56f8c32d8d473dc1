"""BudgetedSequential: segments chosen from a budget measured on the first call; bit-identical."""
import numpy as np
import pytest

import headrace as paddle
from headrace.nn.recompute_budget import predict, saved_bytes
from headrace.memory import BudgetedSequential


def _model(n=8, width=32):
    paddle.seed(0)
    layers = []
    for _ in range(n):
        layers += [paddle.nn.Linear(width, width), paddle.nn.Tanh()]
    return paddle.nn.Sequential(*layers)


def _x(batch=16, width=32):
    return paddle.to_tensor(np.random.default_rng(1).standard_normal((batch, width)).astype(np.float32),
                            stop_gradient=False)


def test_predict_matches_the_reference_chunking_by_hand():
    saved, inputs = [10, 20, 30, 40], [1, 2, 3, 4, 5]
    assert predict(saved, inputs, 1) == 100                      # nothing recomputed
    assert predict(saved, inputs, 2) == max(1 + 70, 1 + 30)      # chunk [0,1] keeps input 1; last [2,3] kept
    assert predict(saved, inputs, 4) == max(1 + 2 + 3 + 40, 1 + 10, 1 + 2 + 20, 1 + 2 + 3 + 30)


def test_chooses_the_fewest_segments_that_fit_and_stays_bit_identical():
    model = _model()
    plain_out = model(_x())
    plain = saved_bytes(plain_out)
    budget = plain // 2
    auto = BudgetedSequential(model, budget)
    first = auto(_x())
    assert auto.plain_bytes == plain and auto.segments > 1 and auto.predicted_bytes <= budget
    assert all(predict_k > budget for predict_k in
               [auto_predict(auto, k) for k in range(1, auto.segments)])
    np.testing.assert_array_equal(first.numpy(), plain_out.numpy())

    def grads(run):
        model.clear_gradients()
        x = _x()
        out = run(x)
        kept = saved_bytes(out)
        (out * out).mean().backward()
        return [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy(), out.numpy()], kept

    ref, kept_plain = grads(model)
    got, kept_auto = grads(auto)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    assert kept_auto < kept_plain


def auto_predict(auto, k):
    """Re-measure and predict for ``k`` segments (what the chooser compared)."""
    model = auto.functions
    saved, inputs, out = [], [_x()._value.nbytes], _x()
    previous = saved_bytes(out)
    for f in model:
        out = f(out)
        total = saved_bytes(out)
        saved.append(total - previous)
        previous = total
        inputs.append(out._value.nbytes)
    return predict(saved, inputs, k)


def test_budget_too_small_is_a_clear_error():
    with pytest.raises(ValueError, match="the least predicted is"):
        BudgetedSequential(_model(), 1)(_x())
    with pytest.raises(ValueError, match="budget_bytes must be a positive"):
        BudgetedSequential(_model(), 0)


def test_fewest_recomputed_functions_not_fewest_segments():
    """(k - 1) * (n // k) functions are recomputed: with 6 functions 3 segments recompute 4, 4
    segments recompute 3; when both fit, 4 is chosen (it also needs less memory here)."""
    from headrace.nn.recompute_budget import choose_segments, recomputed

    assert [recomputed(6, k) for k in (1, 2, 3, 4, 6)] == [0, 3, 4, 3, 5]
    saved, inputs = [100, 100, 100, 1, 1, 1], [1] * 7
    assert [predict(saved, inputs, k) for k in (2, 3, 4)] == [301, 201, 103]
    assert choose_segments(saved, inputs, 250) == (4, 103)
    assert choose_segments(saved, inputs, 400) == (1, 303)
    with pytest.raises(ValueError, match="the least predicted is"):
        choose_segments(saved, inputs, 50)


def test_a_first_call_without_gradients_measures_nothing():
    model = _model()
    auto = BudgetedSequential(model, 10)
    with paddle.no_grad():
        out = auto(_x())
    assert auto.segments is None and out.shape == [16, 32]
    with pytest.raises(ValueError, match="the least predicted is"):
        auto(_x())          # measured now, with gradients: nothing fits 10 bytes
