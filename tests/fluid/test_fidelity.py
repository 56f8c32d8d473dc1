"""Issue 16, fluid 1.x fidelity: each item runs the 1.x idiom."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
from headrace.core import random as hrandom
from headrace.ops.apply import apply_op

rng = np.random.default_rng(16)


def _run(fetch, feed=None, startup=True):
    exe = fluid.Executor(fluid.CPUPlace())
    if startup:
        exe.run(fluid.default_startup_program())
    return exe.run(feed=feed or {}, fetch_list=fetch)


def test_reductions_give_shape_1_and_index_0_works():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    outs = [fluid.layers.mean(x), fluid.layers.reduce_sum(x), fluid.layers.reduce_mean(x),
            fluid.layers.reduce_max(x), fluid.layers.reduce_min(x), fluid.layers.reduce_sum(x, dim=[0, 1])]
    assert all(tuple(v.shape) == (1,) for v in outs)
    assert tuple(paddle.mean(x).shape) == ()           # the 2.x name keeps 0-D
    value = rng.standard_normal((2, 3)).astype("float32")
    got = _run(outs, {"x": value})
    for g, want in zip(got, [value.mean(), value.sum(), value.mean(), value.max(), value.min(), value.sum()]):
        assert g.shape == (1,)
        np.testing.assert_allclose(g[0], want, rtol=1e-6)
    with fluid.dygraph.guard():
        t = fluid.dygraph.to_variable(value)
        assert fluid.layers.reduce_sum(t).shape == [1] and fluid.layers.mean(t).shape == [1]
        assert paddle.mean(t).shape == []


def test_loss_of_shape_1_trains():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    first = exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss])[0][0]
    second = exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss])[0][0]
    assert second < first


def test_1x_keyword_names():
    a = fluid.layers.data(name="a", shape=[2], dtype="float32")
    b = fluid.layers.data(name="b", shape=[2], dtype="float32")
    joined = fluid.layers.concat(input=[a, b], axis=1)
    copied = fluid.layers.assign(input=a)
    const = fluid.layers.assign(input=np.array([[1.0, 2.0]], dtype="float32"))
    va, vb = np.ones((2, 2), "float32"), np.full((2, 2), 2.0, "float32")
    got = _run([joined, copied, const], {"a": va, "b": vb})
    np.testing.assert_array_equal(got[0], np.concatenate([va, vb], axis=1))
    np.testing.assert_array_equal(got[1], va)
    np.testing.assert_array_equal(got[2], [[1.0, 2.0]])


def test_data_declared_again():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    assert fluid.layers.data(name="x", shape=[3], dtype="float32") is x
    assert fluid.data(name="x", shape=[None, 3], dtype="float32") is x
    with pytest.raises(ValueError, match="shape"):
        fluid.layers.data(name="x", shape=[4], dtype="float32")
    with pytest.raises(ValueError, match="dtype"):
        fluid.layers.data(name="x", shape=[3], dtype="int64")
    h = fluid.layers.fc(input=x, size=2)
    with pytest.raises(ValueError, match="not a data variable"):
        fluid.data(name=h.name, shape=[-1, 2], dtype="float32")


def test_compiler_names():
    assert fluid.is_compiled_with_cuda() is False
    assert fluid.compiler.CompiledProgram is fluid.CompiledProgram
    assert isinstance(fluid.compiler.BuildStrategy(), fluid.BuildStrategy)
    assert isinstance(fluid.compiler.ExecutionStrategy(), fluid.ExecutionStrategy)
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(input=x, size=1))
    fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    strategy = fluid.BuildStrategy()
    strategy.fuse_all_optimizer_ops = True
    program = fluid.compiler.CompiledProgram(fluid.default_main_program(), build_strategy=strategy)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    (value,) = exe.run(program, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[loss])
    assert value.shape == (1,) and "%f" % value


def test_fluid_layer_subclass_in_dygraph():
    class Net(fluid.Layer):
        def __init__(self):
            super().__init__()
            self.fc = fluid.dygraph.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)

    with fluid.dygraph.guard():
        net = Net()
        out = net(fluid.dygraph.to_variable(np.ones((4, 3), "float32")))
        assert out.shape == [4, 2] and len(net.parameters()) == 2


def test_fluid_embedding_takes_ids_of_any_shape():
    ids = fluid.data(name="ids", shape=[None, 3], dtype="int64")
    emb = fluid.embedding(input=ids, size=[10, 4], param_attr=fluid.ParamAttr(name="emb_w"))
    assert tuple(emb.shape) == (-1, 3, 4)
    feed = np.array([[1, 2, 3], [0, 9, 9]], dtype="int64")
    (got, table) = _run([emb, "emb_w"], {"ids": feed})
    np.testing.assert_array_equal(got, table[feed])


def test_nets_glu_and_attention_match_numpy():
    x = fluid.data(name="x", shape=[None, 4, 3], dtype="float64")
    q = fluid.data(name="q", shape=[None, 5, 6], dtype="float64")
    k = fluid.data(name="k", shape=[None, 7, 6], dtype="float64")
    v = fluid.data(name="v", shape=[None, 7, 4], dtype="float64")
    gated = fluid.nets.glu(input=x, dim=1)
    att = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=2)
    att1 = fluid.nets.scaled_dot_product_attention(q, k, v)
    data = {"x": rng.standard_normal((2, 4, 3)), "q": rng.standard_normal((2, 5, 6)),
            "k": rng.standard_normal((2, 7, 6)), "v": rng.standard_normal((2, 7, 4))}
    got_glu, got_att, got_att1 = _run([gated, att, att1], data)
    a, b = data["x"][:, :2], data["x"][:, 2:]
    np.testing.assert_allclose(got_glu, a / (1 + np.exp(-b)), rtol=1e-12)

    def attention(heads):
        def split(t):
            n, length, d = t.shape
            return t.reshape(n, length, heads, d // heads).transpose(0, 2, 1, 3)
        qh, kh, vh = split(data["q"]), split(data["k"]), split(data["v"])
        scores = qh * (6 // heads) ** -0.5 @ kh.transpose(0, 1, 3, 2)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        out = (weights @ vh).transpose(0, 2, 1, 3)
        return out.reshape(out.shape[0], out.shape[1], -1)
    np.testing.assert_allclose(got_att, attention(2), rtol=1e-10)
    np.testing.assert_allclose(got_att1, attention(1), rtol=1e-10)
    with pytest.raises(ValueError, match="divisible"):
        fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=4)


def test_nets_conv_groups_build_the_reference_layers():
    img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
    pooled = fluid.nets.simple_img_conv_pool(input=img, num_filters=3, filter_size=3, pool_size=2, pool_stride=2,
                                             act="relu")
    group = fluid.nets.img_conv_group(input=img, conv_num_filter=[2, 2], pool_size=2, conv_act="relu",
                                      conv_with_batchnorm=True, conv_batchnorm_drop_rate=[0.0, 0.5],
                                      pool_stride=2)
    assert tuple(pooled.shape) == (-1, 3, 3, 3) and tuple(group.shape) == (-1, 2, 4, 4)
    types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert types.count("batch_norm") == 2 and types.count("dropout") == 1 and types.count("pool2d") == 2
    feed = {"img": rng.standard_normal((2, 1, 8, 8)).astype("float32")}
    got_pool, got_group = _run([pooled, group], feed)
    assert got_pool.shape == (2, 3, 3, 3) and (got_pool >= 0).all()
    assert got_group.shape == (2, 2, 4, 4)
    with pytest.raises(ValueError, match="entries"):
        fluid.nets.img_conv_group(input=img, conv_num_filter=[2, 2], pool_size=2, conv_padding=[1, 1, 1])


def test_create_global_var_in_dygraph_is_a_tensor():
    with fluid.dygraph.guard():
        var = fluid.layers.create_global_var(shape=[2, 3], value=1.5, dtype="float32", persistable=True)
        assert isinstance(var, paddle.Tensor) and var.stop_gradient and var.persistable
        np.testing.assert_array_equal(var.numpy(), np.full((2, 3), 1.5, "float32"))


def test_set_lr_with_a_variable_in_static_mode():
    x = fluid.layers.data(name="x", shape=[2], dtype="float32")
    y = fluid.layers.fc(input=x, size=1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
    loss = fluid.layers.mean(y)
    lr = fluid.layers.create_global_var(shape=[1], value=0.25, dtype="float32", persistable=True, name="my_lr")
    opt = fluid.optimizer.SGD(learning_rate=0.1)
    opt.set_lr(lr)
    opt.minimize(loss)
    sgd = [op for op in fluid.default_main_program().global_block().ops if op.type == "sgd"]
    assert sgd and sgd[0].inputs["LearningRate"] == ["my_lr"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    w0 = np.array(fluid.global_scope().find_var("w").get_tensor())
    feed = np.array([[1.0, 3.0]], dtype="float32")
    exe.run(feed={"x": feed}, fetch_list=[loss])
    w1 = np.array(fluid.global_scope().find_var("w").get_tensor())
    np.testing.assert_allclose(w1, w0 - 0.25 * feed.T, rtol=1e-6)   # d mean(xw)/dw = x^T for one row
    with pytest.raises(ValueError, match="shape \\[1\\]"):
        opt.set_lr(fluid.layers.create_global_var(shape=[2], value=0.1, dtype="float32"))


def test_seed_op_accepts_the_reference_attributes():
    hrandom.set_random_seed_generator("dropout_rng", 123)
    main = fluid.default_main_program()
    block = main.global_block()
    outs = [block.create_var(name=f"s{i}", shape=[1], dtype="int32") for i in range(3)]
    block.append_op("seed", {}, {"Out": [outs[0]]}, {"deterministic": True, "rng_name": "dropout_rng",
                                                     "force_cpu": True})
    block.append_op("seed", {}, {"Out": [outs[1]]}, {"seed": 7, "force_cpu": True})
    first = _run([outs[0], outs[1]], startup=False)
    hrandom.set_random_seed_generator("dropout_rng", 123)
    again = _run([outs[0], outs[1]], startup=False)
    assert first[0][0] == again[0][0] != 0               # the named generator, replayed after reseeding
    assert first[1][0] == again[1][0]
    block.append_op("seed", {}, {"Out": [outs[2]]}, {"deterministic": True, "rng_name": "nope"})
    with pytest.raises(ValueError, match="no random seed generator named 'nope'"):
        _run([outs[2]], startup=False)
    with fluid.dygraph.guard():
        out = apply_op("seed", {}, {"deterministic": True, "rng_name": "dropout_rng"})["Out"][0]
        assert out.numpy().shape == (1,)


def test_dygraph_pool2d_layer_matches_fluid_layers_pool2d():
    value = rng.standard_normal((2, 3, 6, 6)).astype("float32")
    x = fluid.data(name="img", shape=[None, 3, 6, 6], dtype="float32")
    want_max, want_avg = _run([fluid.layers.pool2d(x, pool_size=2, pool_stride=2),
                               fluid.layers.pool2d(x, pool_size=3, pool_type="avg", global_pooling=True)],
                              {"img": value})
    np.testing.assert_array_equal(want_max, value.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    with fluid.dygraph.guard():
        t = fluid.dygraph.to_variable(value)
        np.testing.assert_array_equal(fluid.dygraph.Pool2D(pool_size=2, pool_stride=2)(t).numpy(), want_max)
        got = fluid.dygraph.Pool2D(pool_size=3, pool_type="avg", global_pooling=True)(t).numpy()
        np.testing.assert_allclose(got, want_avg, rtol=1e-6)
    with pytest.raises(ValueError, match="pool_type"):
        fluid.dygraph.Pool2D(pool_type="min")
