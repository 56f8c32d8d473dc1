"""Gradient clipping and weight decay as ops on (param, grad) pairs, static mode, against values
computed by hand from the formulas."""
import numpy as np
import pytest

import headrace.static as static
from headrace.core.program import Program
from headrace.optimizer import clip, regularizer
from headrace.runtime import Executor, Scope

P = [np.array([[1.0, -2.0], [0.0, 3.0]]), np.array([0.5, -0.25, 0.0])]
G = [np.array([[3.0, -4.0], [0.5, 0.0]]), np.array([1.0, 2.0, -2.0])]


class _Param:
    """Stands in for a Parameter: only ``need_clip`` / ``regularizer`` are read."""

    def __init__(self, var, need_clip=True, regularizer=None):
        self.var, self.need_clip, self.regularizer = var, need_clip, regularizer


def run_pairs(transform, need_clip=(True, True), regs=(None, None)):
    main = Program()
    with static.program_guard(main, Program()):
        pvars = [static.data(f"p{i}", list(p.shape), "float64") for i, p in enumerate(P)]
        gvars = [static.data(f"g{i}", list(g.shape), "float64") for i, g in enumerate(G)]
        params = [_Param(v, c, r) for v, c, r in zip(pvars, need_clip, regs)]
        # regularizers read the parameter Variable itself
        pairs = transform([(p, g) for p, g in zip(params, gvars)], pvars)
    feed = {**{f"p{i}": p for i, p in enumerate(P)}, **{f"g{i}": g for i, g in enumerate(G)}}
    return Executor().run(main, feed=feed, fetch_list=[g for _, g in pairs], scope=Scope())


def by_clip(c):
    return lambda pairs, pvars: c(pairs)


def test_clip_by_value():
    got = run_pairs(by_clip(clip.ClipGradByValue(max=2.0, min=-1.0)))
    np.testing.assert_array_equal(got[0], [[2.0, -1.0], [0.5, 0.0]])
    np.testing.assert_array_equal(got[1], [1.0, 2.0, -1.0])


def test_clip_by_norm_each_tensor():
    got = run_pairs(by_clip(clip.ClipGradByNorm(clip_norm=2.5)))
    np.testing.assert_allclose(got[0], G[0] * 2.5 / np.sqrt(9 + 16 + 0.25))
    np.testing.assert_allclose(got[1], G[1] * 2.5 / 3.0)


def test_clip_by_global_norm_and_need_clip():
    got = run_pairs(by_clip(clip.ClipGradByGlobalNorm(clip_norm=1.0)))
    norm = np.sqrt(9 + 16 + 0.25 + 1 + 4 + 4)
    np.testing.assert_allclose(got[0], G[0] / norm)
    np.testing.assert_allclose(got[1], G[1] / norm)
    kept = run_pairs(by_clip(clip.ClipGradByGlobalNorm(clip_norm=1.0)), need_clip=(True, False))
    np.testing.assert_allclose(kept[0], G[0] / np.sqrt(9 + 16 + 0.25))
    np.testing.assert_array_equal(kept[1], G[1])
    unclipped = run_pairs(by_clip(clip.ClipGradByGlobalNorm(clip_norm=100.0)))
    np.testing.assert_allclose(unclipped[0], G[0])


def _regularize(default):
    def transform(pairs, pvars):
        # the regularizer reads the Variable, so hand it the Variable with the _Param's settings
        with_vars = []
        for (holder, g), v in zip(pairs, pvars):
            v.regularizer = holder.regularizer
            with_vars.append((v, g))
        return regularizer.append_regularization(with_vars, default)
    return transform


def test_l2_and_l1_decay_and_per_parameter_wins():
    got = run_pairs(_regularize(regularizer.L2Decay(0.1)))
    np.testing.assert_allclose(got[0], G[0] + 0.1 * P[0])
    np.testing.assert_allclose(got[1], G[1] + 0.1 * P[1])
    got = run_pairs(_regularize(regularizer.L2Decay(0.1)), regs=(regularizer.L1Decay(0.5), None))
    np.testing.assert_allclose(got[0], G[0] + 0.5 * np.sign(P[0]))
    np.testing.assert_allclose(got[1], G[1] + 0.1 * P[1])
    assert regularizer.L2DecayRegularizer(regularization_coeff=0.2).coeff == 0.2


def test_argument_errors():
    with pytest.raises(ValueError, match="min"):
        clip.ClipGradByValue(max=1.0, min=2.0)
    with pytest.raises(ValueError, match="clip_norm"):
        clip.ClipGradByGlobalNorm(0.0)
    with pytest.raises(TypeError, match="coeff"):
        regularizer.L2Decay("0.1")
    with pytest.raises(ValueError, match="coeff"):
        regularizer.L1Decay(-1.0)
    assert regularizer.from_spec(regularizer.L1Decay(0.3).to_dict()).coeff == 0.3
