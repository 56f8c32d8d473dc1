"""Issue 22 items and the optimizer items of the fluid 1.x fidelity list, each with the 1.x idiom:
fluid.regularizer.L1Decay/L2Decay are the 1.x classes; clip classes drop (param, None) pairs in
both modes; Optimizer.append_regularization_ops; fluid.clip.set_gradient_clip /
append_gradient_clip_ops; fluid.optimizer.Adagrad; float16 squared_l2_norm accumulated in
float32; minimize() returns every op it appended; Momentum(None) raises 'is not set'."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core import context
from headrace.core.roles import OpRole
from headrace.ops.apply import apply_op_single
from headrace.runtime import Executor, Scope
from tests.optimizer.test_both_modes import MODES, NAMES, check, expected_sgd, run


# --- fluid.regularizer short names --------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_fluid_l1_l2_decay_take_regularization_coeff(mode):
    l1 = fluid.regularizer.L1Decay(regularization_coeff=0.05)
    l2 = fluid.regularizer.L2Decay(regularization_coeff=0.3)
    assert isinstance(l1, fluid.regularizer.L1DecayRegularizer)
    assert isinstance(l2, fluid.regularizer.L2DecayRegularizer)
    got = run(mode, lambda ps: paddle.optimizer.SGD(0.1, parameters=ps, weight_decay=l1),
              attrs={"w": {"regularizer": l2}})
    check(got, expected_sgd([0.1] * 5, lambda g, p: {k: g[k] + (0.3 * p[k] if k == "w" else 0.05 * np.sign(p[k]))
                                                     for k in g}))


# --- clip classes drop (param, None) ------------------------------------------------------------
def _eager_pairs():
    x = paddle.to_tensor(np.array([3.0, 4.0], np.float32))
    y = paddle.to_tensor(np.array([1.0, 0.0], np.float32))
    return x, y


def test_clip_classes_drop_pairs_without_gradient_in_eager_mode():
    with context.static_mode_guard(False):
        x, y = _eager_pairs()
        out = paddle.nn.ClipGradByGlobalNorm(0.8)([(x, x), (x, y), (x, None)])
        assert len(out) == 2
        norm = np.sqrt(25.0 + 1.0)
        np.testing.assert_allclose(out[0][1].numpy(), np.array([3.0, 4.0]) * 0.8 / norm, rtol=1e-6)
        np.testing.assert_allclose(out[1][1].numpy(), np.array([1.0, 0.0]) * 0.8 / norm, rtol=1e-6)
        assert paddle.nn.ClipGradByNorm(1.0)([(x, None)]) == []
        assert paddle.nn.ClipGradByValue(1.0)([(x, None)]) == []


@pytest.mark.parametrize("make", [lambda: paddle.nn.ClipGradByGlobalNorm(0.8), lambda: paddle.nn.ClipGradByNorm(1.0),
                                  lambda: paddle.nn.ClipGradByValue(1.0)], ids=["global", "norm", "value"])
def test_clip_classes_drop_pairs_without_gradient_in_static_mode(make):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [2], "float32")
        y = static.data("y", [2], "float32")
        out = make()([(x, None), (x, y)])
    assert len(out) == 1 and out[0][0] is x


# --- Optimizer.append_regularization_ops --------------------------------------------------------
def test_append_regularization_ops_both_modes():
    p0 = np.array([1.0, -2.0], np.float32)
    g0 = np.array([0.5, 0.5], np.float32)
    want = g0 + 0.1 * p0
    with context.static_mode_guard(False):
        p, g = paddle.to_tensor(p0), paddle.to_tensor(g0)
        opt = paddle.optimizer.SGD(0.1, parameters=[p])
        (_, new), = opt.append_regularization_ops([(p, g)], paddle.regularizer.L2Decay(0.1))
        np.testing.assert_allclose(new.numpy(), want, rtol=1e-6)
    main = static.Program()
    with static.program_guard(main, static.Program()):
        pv = static.data("p", [2], "float32")
        gv = static.data("g", [2], "float32")
        (_, new), = fluid.optimizer.SGD(0.1).append_regularization_ops(
            [(pv, gv)], fluid.regularizer.L2Decay(regularization_coeff=0.1))
    got, = Executor().run(main, feed={"p": p0, "g": g0}, fetch_list=[new], scope=Scope())
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- fluid.clip.set_gradient_clip / append_gradient_clip_ops ------------------------------------
def _static_sgd_with(set_clip, opt_clip=None):
    def make(params):
        with pytest.warns(UserWarning, match="deprecated"):
            set_clip()
        return fluid.optimizer.SGD(0.2, grad_clip=opt_clip)
    return run("static", make)


def test_set_gradient_clip_clips_every_parameter():
    got = _static_sgd_with(lambda: fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(0.3)))
    check(got, expected_sgd([0.2] * 5, lambda g, p: {k: np.clip(v, -0.3, 0.3) for k, v in g.items()}))


def test_set_gradient_clip_on_named_parameters_and_global_norm_per_group():
    got = _static_sgd_with(lambda: fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(0.5),
                                                               param_list=["w", "b"]))

    def clipped(g, p):
        norm = np.sqrt(sum((g[k] ** 2).sum() for k in ("w", "b")))
        return {k: g[k] * 0.5 / max(norm, 0.5) if k in ("w", "b") else g[k] for k in g}
    check(got, expected_sgd([0.2] * 5, clipped))


def test_the_optimizers_own_grad_clip_wins():
    got = _static_sgd_with(lambda: fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(0.01)),
                           opt_clip=paddle.nn.ClipGradByValue(0.3))
    check(got, expected_sgd([0.2] * 5, lambda g, p: {k: np.clip(v, -0.3, 0.3) for k, v in g.items()}))


def test_set_gradient_clip_errors():
    with pytest.raises(TypeError, match="ClipGradBase"), pytest.warns(UserWarning):
        fluid.clip.set_gradient_clip(0.5)
    with pytest.raises(TypeError, match="param_list"), pytest.warns(UserWarning):
        fluid.clip.set_gradient_clip(paddle.nn.ClipGradByValue(1.0), param_list=[1, "w"])


def test_append_gradient_clip_ops_groups_by_clip_and_drops_none():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        a = static.create_parameter([2], "float32", attr=paddle.ParamAttr(name="a"))
        b = static.create_parameter([2], "float32", attr=paddle.ParamAttr(name="b"))
        c = static.create_parameter([2], "float32", attr=paddle.ParamAttr(name="c"))
        ga, gb, gc = (static.data(n, [2], "float32") for n in ("ga", "gb", "gc"))
        with pytest.warns(UserWarning):
            fluid.clip.set_gradient_clip(fluid.clip.GradientClipByNorm(1.0), param_list=[a, b])
        out = fluid.clip.append_gradient_clip_ops([(a, ga), (c, None), (b, gb), (c, gc)])
    assert [p.name for p, _ in out] == ["a", "b", "c"]
    assert out[2][1] is gc                      # c carries no clip: unchanged
    feed = {"ga": np.array([3.0, 4.0], np.float32), "gb": np.array([0.3, 0.4], np.float32),
            "gc": np.array([30.0, 40.0], np.float32)}
    got = Executor().run(main, feed=feed, fetch_list=[g for _, g in out[:2]], scope=Scope())
    np.testing.assert_allclose(got[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(got[1], [0.3, 0.4], rtol=1e-6)


# --- fluid.optimizer.Adagrad ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_fluid_adagrad(mode):
    got = run(mode, lambda ps: fluid.optimizer.Adagrad(0.1, epsilon=1e-4, parameter_list=ps))
    from tests.optimizer.test_more_optimizers import adagrad_ref, trajectory, zeros
    check(got, trajectory(adagrad_ref(1e-4), zeros("m"), rates=(0.1,) * 5))
    assert fluid.optimizer.Adagrad is fluid.optimizer.AdagradOptimizer


# --- float16 squared_l2_norm ----------------------------------------------------------------------
def test_squared_l2_norm_of_float16_accumulates_in_float32():
    x = np.full([1000], 300.0, np.float16)          # sum of squares 9e7: far beyond float16's 65504
    main = static.Program()
    with static.program_guard(main, static.Program()):
        xv = static.data("x", [1000], "float16")
        out = apply_op_single("squared_l2_norm", {"X": xv})
    assert str(out.dtype) == "float32"
    got, = Executor().run(main, feed={"x": x}, fetch_list=[out], scope=Scope())
    np.testing.assert_allclose(got, [9e7], rtol=1e-6)


def test_global_norm_clip_of_float16_gradients():
    g0 = np.full([4, 100], 60.0, np.float16)        # norm 1200, its square overflows float16
    with context.static_mode_guard(False):
        p = paddle.to_tensor(np.zeros([4, 100], np.float16))
        (_, g), = paddle.nn.ClipGradByGlobalNorm(1.0)([(p, paddle.to_tensor(g0))])
        assert str(g.dtype) == "float16"
        np.testing.assert_allclose(g.numpy().astype(np.float64), np.full([4, 100], 60.0 / 1200.0), rtol=1e-3)


# --- minimize returns every op; Momentum(None) -----------------------------------------------------
def test_minimize_returns_every_op_it_appended():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        h = fluid.layers.fc(x, size=3, param_attr=fluid.ParamAttr(name="w0", learning_rate=0.5))
        loss = fluid.layers.reduce_mean(h)
        before = len(main.global_block().ops)
        opt = fluid.optimizer.MomentumOptimizer(0.1, 0.9, grad_clip=fluid.clip.GradientClipByValue(1.0))
        ops, _ = opt.minimize(loss)
    appended = [op for op in main.global_block().ops[before:] if int(op.attr("op_role")) & OpRole.Optimize]
    assert ops == appended and len(ops) == 5
    types = [op.type for op in ops]
    assert types.count("momentum") == 2 and types.count("clip") == 2
    assert "scale" in types                   # w0's learning-rate scale op


def test_momentum_none_is_not_set():
    with pytest.raises(ValueError, match="learning_rate is not set"):
        fluid.optimizer.Momentum(learning_rate=None, momentum=0.9)
    with pytest.raises(ValueError, match="momentum is not set"):
        fluid.optimizer.Momentum(learning_rate=0.1, momentum=None)
    with pytest.raises(ValueError, match="momentum is not set"):
        paddle.optimizer.Momentum(momentum=None)


def test_names_are_exported():
    for name in NAMES:
        assert name in ("b", "w", "z")
    for name in ("Adagrad", "AdagradOptimizer", "RMSPropOptimizer", "AdadeltaOptimizer", "AdamaxOptimizer",
                 "LambOptimizer", "DecayedAdagradOptimizer", "DecayedAdagrad"):
        assert hasattr(fluid.optimizer, name), name
    for name in ("AdamW", "Adagrad", "RMSProp", "Adadelta", "Adamax", "Lamb", "NAdam", "RAdam"):
        assert hasattr(paddle.optimizer, name), name
