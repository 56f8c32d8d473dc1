"""Layers compose ops correctly: compared with NumPy using the parameters fetched from the scope."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.errors import ShapeError
from headrace.runtime import Executor, Scope

rng = np.random.default_rng(0)


def _run(main, startup, feed, fetch):
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    values = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    return values, (lambda name: np.array(scope.find_var(name).get_tensor()))


def test_data_layers():
    x = fluid.layers.data(name="x", shape=[32], dtype="float32")
    assert x.shape == (-1, 32) and x.stop_gradient and x.is_data
    y = fluid.layers.data(name="y", shape=[2, 2], append_batch_size=False)
    assert y.shape == (2, 2) and y.dtype == "float32"
    z = fluid.layers.data(name="z", shape=[-1, 5], dtype="int64")
    assert z.shape == (-1, 5)
    w = static.data(name="w", shape=[None, 1, 8, 8])
    assert w.shape == (-1, 1, 8, 8) and w.dtype == paddle.float32
    v = fluid.data(name="v", shape=[None, 13], dtype="float64")
    assert v.dtype == np.float64
    with pytest.raises(ValueError, match="'x' has been declared before with shape"):
        static.data("x", [3])


def test_fc_matches_numpy_with_flatten_dims_list_inputs_and_act():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        a = static.data("a", [None, 3, 4], "float64")
        b = static.data("b", [None, 5], "float64")
        one = fluid.layers.fc(input=a, size=6, num_flatten_dims=2, act="tanh")
        two = fluid.layers.fc(input=[fluid.layers.reshape(a, [-1, 12]), b], size=2, bias_attr=False)
    assert [op.type for op in main.global_block().ops][-3:] == ["mul", "mul", "sum"]
    av, bv = rng.random((2, 3, 4)), rng.random((2, 5))
    (o1, o2), param = _run(main, startup, {"a": av, "b": bv}, [one, two])
    np.testing.assert_allclose(o1, np.tanh(av @ param("fc_0.w_0") + param("fc_0.b_0")), rtol=1e-12)
    assert o1.shape == (2, 3, 6)
    want = av.reshape(2, 12) @ param("fc_1.w_0") + bv @ param("fc_1.w_1")
    np.testing.assert_allclose(o2, want, rtol=1e-12)
    assert not main.global_block().has_var("fc_1.b_0")


def test_static_nn_fc_names_its_arguments_the_2x_way():
    x = static.data("x", [None, 4], "float32")
    out = static.nn.fc(x=x, size=3, activation="softmax", weight_attr=paddle.ParamAttr(name="W"))
    assert out.op.type == "softmax" and static.default_main_program().global_block().has_var("W")


def test_fc_errors():
    x = static.data("x", [None, None], "float32")
    with pytest.raises(ShapeError, match="feature dims of 'x' must be known"):
        fluid.layers.fc(input=x, size=3)
    y = static.data("y", [None, 4], "float32")
    with pytest.raises(ValueError, match="size must be a positive int"):
        fluid.layers.fc(input=y, size=0)
    with pytest.raises(TypeError, match="`input` must be a Variable"):
        fluid.layers.fc(input=np.ones((2, 4)), size=3)


def _conv_ref(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, m, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,mchw->nm", patch, w)
    return out + b.reshape(1, m, 1, 1)


def test_small_conv_net_runs_and_matches_numpy():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        img = static.data("img", [None, 2, 6, 6], "float64")
        conv = fluid.layers.conv2d(img, num_filters=3, filter_size=3, stride=1, padding=1, act="relu")
        bn = static.nn.batch_norm(conv, is_test=False)
        pool = fluid.layers.pool2d(bn, pool_size=2, pool_type="max", pool_stride=2)
        probs = static.nn.fc(pool, size=4, activation="softmax")
    x = rng.random((3, 2, 6, 6))
    (c, b, p, out), param = _run(main, startup, {"img": x}, [conv, bn, pool, probs])
    np.testing.assert_allclose(c, np.maximum(_conv_ref(x, param("conv2d_0.w_0"), param("conv2d_0.b_0"), 1, 1), 0),
                               rtol=1e-10, atol=1e-12)
    mean, var = c.mean(axis=(0, 2, 3)), c.var(axis=(0, 2, 3))
    want_bn = (c - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(b, want_bn, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(param("batch_norm_0.w_1"), 0.1 * mean, rtol=1e-10)
    np.testing.assert_allclose(param("batch_norm_0.w_2"), 0.9 + 0.1 * var, rtol=1e-10)
    np.testing.assert_allclose(p, b.reshape(3, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)
    assert out.shape == (3, 4)


def test_depthwise_conv_is_chosen_when_groups_equal_channels():
    img = static.data("img", [None, 4, 5, 5], "float32")
    out = fluid.layers.conv2d(img, num_filters=8, filter_size=3, groups=4, bias_attr=False)
    assert out.op.type == "depthwise_conv2d" and out.shape == (-1, 8, 3, 3)
    with pytest.raises(ValueError, match="divisible by groups"):
        fluid.layers.conv2d(img, num_filters=8, filter_size=3, groups=3)


def test_forward_mlp_in_the_seed_style_runs():
    input_x = fluid.layers.data(name="x", shape=[32], dtype="float32")
    input_y = fluid.layers.data(name="y", shape=[1], dtype="int64")
    fc_1 = fluid.layers.fc(input=input_x, size=128)
    prediction = fluid.layers.fc(input=[fc_1], size=2, act="softmax")
    cost = fluid.layers.cross_entropy(input=prediction, label=input_y)
    sum_cost = fluid.layers.reduce_mean(cost)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    x = rng.random((32, 32)).astype("float32")
    y = rng.integers(0, 2, (32, 1)).astype("int64")
    cost_val, pred = exe.run(feed={"x": x, "y": y}, program=fluid.default_main_program(),
                             fetch_list=[sum_cost.name, prediction])
    assert cost_val.shape == (1,) and np.isfinite(cost_val)   # fluid 1.x reductions: shape [1]
    np.testing.assert_allclose(cost_val, np.mean(-np.log(pred[np.arange(32), y[:, 0]])), rtol=1e-5)


def test_embedding_layers():
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
    emb = fluid.layers.embedding(ids, size=[10, 4])
    assert emb.op.type == "lookup_table" and emb.shape == (-1, 4)
    seq = static.data("seq", [None, 7], "int64")
    emb2 = static.nn.embedding(seq, size=[10, 4], padding_idx=-1)
    assert emb2.op.type == "lookup_table_v2" and emb2.shape == (-1, 7, 4)
    assert emb2.op.attr("padding_idx") == 9
    ids_v = np.array([[1], [9]], "int64")
    seq_v = np.array([[0, 9, 3, 3, 1, 2, 9]], "int64")
    (e1, e2), param = _run(static.default_main_program(), static.default_startup_program(),
                           {"ids": ids_v, "seq": seq_v}, [emb, emb2])
    np.testing.assert_array_equal(e1, param("embedding_0.w_0")[[1, 9]])
    want = param("embedding_1.w_0")[seq_v]
    want[seq_v == 9] = 0
    np.testing.assert_array_equal(e2, want)


def test_layer_norm_layer():
    x = static.data("x", [None, 3, 4], "float64")
    y = fluid.layers.layer_norm(x, begin_norm_axis=1)
    xv = rng.random((2, 3, 4))
    (out,), _ = _run(static.default_main_program(), static.default_startup_program(), {"x": xv}, [y])
    flat = xv.reshape(2, 12)
    want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.reshape(2, 12), want, rtol=1e-10)


def test_shared_parameter_is_created_and_initialized_once():
    x = static.data("x", [None, 4], "float32")
    attr = paddle.ParamAttr(name="shared_w")
    static.nn.fc(x, 4, weight_attr=attr)
    static.nn.fc(x, 4, weight_attr=attr)
    main, startup = static.default_main_program(), static.default_startup_program()
    assert sum(1 for op in startup.global_block().ops if "shared_w" in op.output_arg_names) == 1
    assert sum(1 for op in main.global_block().ops if "shared_w" in op.input_arg_names) == 2
    with pytest.raises(ValueError, match="already exists with shape"):
        static.nn.fc(x, 5, weight_attr=attr)


def test_param_attr_flags_reach_the_parameter():
    x = static.data("x", [None, 4], "float32")
    static.nn.fc(x, 3, weight_attr=paddle.ParamAttr(name="w", learning_rate=0.5, trainable=False))
    w = static.default_main_program().global_block().var("w")
    assert w.optimize_attr == {"learning_rate": 0.5} and not w.trainable and w.stop_gradient
    assert w.persistable


def test_square_error_cost_and_mean_layers():
    x = fluid.data(name="x", shape=[None, 13], dtype="float32")
    y = fluid.data(name="y", shape=[None, 1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    loss = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_loss = fluid.layers.mean(loss)
    types = [op.type for op in static.default_main_program().global_block().ops]
    assert types == ["mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    xv, yv = rng.random((5, 13)).astype("float32"), rng.random((5, 1)).astype("float32")
    (pred, avg), _ = _run(static.default_main_program(), static.default_startup_program(), {"x": xv, "y": yv},
                          [y_predict, avg_loss])
    np.testing.assert_allclose(avg, np.mean((pred - yv) ** 2), rtol=1e-6)
