"""Issue 21: fetched size-1 values work with the 1.x scalar idioms under NumPy >= 2.4."""
import operator
import pickle

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.fetched import ScalarArray

rng = np.random.default_rng(21)


def _fetch(build, feed):
    """Build ``build(x)`` on a data variable x, run it once and return the fetched values."""
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    outs = build(x)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe.run(feed={"x": feed}, fetch_list=list(outs))


X = rng.uniform(0.5, 2.0, (4, 3)).astype("float32")


def _size1_values():
    return _fetch(lambda x: [fluid.layers.mean(x), paddle.mean(x),
                             fluid.layers.cast(fluid.layers.reduce_sum(fluid.layers.cast(x, "int64")), "int64")],
                  X.round())


def test_fluid_mean_is_shape_1_and_paddle_mean_is_0d():
    one, zero_d, _ = _size1_values()
    assert one.shape == (1,) and zero_d.shape == ()
    assert one.dtype == np.float32 and isinstance(one, np.ndarray)
    np.testing.assert_allclose(one[0], X.round().mean(), rtol=1e-6)


@pytest.mark.parametrize("index", [0, 1])
def test_float_idioms_on_shape_1_and_0d(index):
    value = _size1_values()[index]
    want = float(np.asarray(value).reshape(()))
    assert float(value) == want
    assert int(value) == int(want)
    assert bool(value) is True
    assert "%f" % value == "%f" % want
    assert "%d" % value == "%d" % int(want)
    assert "%.3f" % value == "%.3f" % want
    assert "{:.3f}".format(value) == "{:.3f}".format(want)
    assert f"{value:8.2f}" == f"{want:8.2f}"
    assert format(value, "") == str(np.asarray(value))        # no spec: printed as the array
    assert str(value) == str(np.asarray(value))
    assert repr(value) == repr(np.asarray(value))


def test_integer_value_is_an_index():
    *_, count = _size1_values()
    assert count.dtype == np.int64 and count.shape == (1,)
    want = int(X.round().astype("int64").sum())
    assert operator.index(count) == want and list(range(100))[count] == want
    assert "%d" % count == str(want)
    with pytest.raises(TypeError, match="integer"):
        operator.index(_size1_values()[0])     # a float is no index, as for any float array


def test_everything_else_is_the_plain_array():
    one, zero_d, _ = _size1_values()
    assert one[0] == np.asarray(one)[0] and type(one[0]) is np.float32     # [0] is NumPy's scalar
    assert np.array_equal(one, np.asarray(one)) and isinstance(one, np.ndarray)
    for result in (one * 2, one + one, -one, np.mean(one), np.concatenate([one, one]), one.sum(),
                   np.array([one, one]), zero_d * 2):
        assert not isinstance(result, ScalarArray), type(result)     # results are plain NumPy
    np.testing.assert_array_equal(one * 2, np.asarray(one) * 2)
    copy = one.copy()
    copy += 1                                    # in place: the value keeps its type and memory
    assert isinstance(copy, ScalarArray) and copy[0] == one[0] + 1
    back = pickle.loads(pickle.dumps(one))
    assert np.array_equal(back, one) and back.dtype == one.dtype and float(back) == float(one)


def test_larger_arrays_are_unchanged_and_keep_numpy_errors():
    (pair,) = _fetch(lambda x: [fluid.layers.reduce_mean(x, dim=[1])[:2] if False else
                                fluid.layers.slice(fluid.layers.reduce_mean(x, dim=[1]), [0], [0], [2])],
                     X)
    assert type(pair) is np.ndarray and pair.shape == (2,)
    for convert in (float, int):
        with pytest.raises(TypeError, match="0-dimensional"):
            convert(pair)
    with pytest.raises(TypeError):
        "%f" % pair
    with pytest.raises(TypeError):
        "{:.3f}".format(pair)
    with pytest.raises(ValueError):
        bool(pair)


def test_return_numpy_false_is_untouched():
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    loss = fluid.layers.mean(x)
    exe = fluid.Executor(fluid.CPUPlace())
    (value,) = exe.run(feed={"x": X}, fetch_list=[loss], return_numpy=False)
    assert not isinstance(value, np.ndarray) and np.asarray(value).shape == (1,)


def test_eager_numpy_of_one_element():
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(X)
        loss = fluid.layers.mean(x)
        assert loss.shape == [1]
        value = loss.numpy()
        assert float(value) == pytest.approx(float(X.mean()), rel=1e-6) and "%.4f" % value
        assert value[0] == value.reshape(()) and isinstance(value, np.ndarray)
        assert f"{paddle.mean(x).numpy():.2f}" == f"{X.mean():.2f}"
        big = x.numpy()
        assert type(big) is np.ndarray
        with pytest.raises(TypeError):
            float(big)


def test_recognize_digits_style_loop_runs():
    """The book chapter's loop: print "%f" of loss and accuracy, collect with float(), average."""
    images = fluid.layers.data(name="pixel", shape=[1, 8, 8], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    conv = fluid.layers.conv2d(input=images, num_filters=4, filter_size=3, act="relu")
    pool = fluid.layers.pool2d(input=conv, pool_size=2, pool_stride=2)
    prediction = fluid.layers.fc(input=pool, size=10, act="softmax")
    avg_loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    acc = fluid.layers.accuracy(input=prediction, label=label)
    test_program = fluid.default_main_program().clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    data = rng.uniform(0, 1, (64, 1, 8, 8)).astype("float32")
    labels = (data.reshape(64, -1).sum(1) > 32).astype("int64").reshape(-1, 1)
    lines, losses, accs = [], [], []
    for step in range(10):
        batch = slice(step % 4 * 16, step % 4 * 16 + 16)
        loss_v, acc_v = exe.run(fluid.default_main_program(), feed={"pixel": data[batch], "label": labels[batch]},
                                fetch_list=[avg_loss, acc])
        if step % 3 == 0:
            lines.append("Pass %d, Batch %d, Cost %f, Acc %f" % (0, step, loss_v, acc_v))
        losses.append(float(loss_v))
        accs.append(float(acc_v))
        assert loss_v[0] == losses[-1] and acc_v[0] == accs[-1] and acc_v.shape == (1,)
    test_loss, test_acc = exe.run(test_program, feed={"pixel": data, "label": labels}, fetch_list=[avg_loss, acc])
    avg = np.array(losses).mean()
    summary = "Test with Epoch %d, avg_cost: %s, acc: %s" % (0, test_loss, test_acc)
    assert len(lines) == 4 and lines[0].startswith("Pass 0, Batch 0, Cost ")
    assert np.isfinite(avg) and 0.0 <= np.array(accs).mean() <= 1.0 and "avg_cost" in summary
    assert losses[-1] < losses[0]        # it trains


def test_dygraph_mnist_style_loop_runs():
    """The 1.x dygraph chapter: layers from fluid.dygraph, loss by fluid.layers.mean, progress
    printed with "%f" of loss.numpy(), values collected with float() and [0]."""
    class Net(fluid.dygraph.Layer):
        def __init__(self):
            super().__init__()
            self.conv = fluid.dygraph.Conv2D(num_channels=1, num_filters=4, filter_size=3, act="relu")
            self.pool = fluid.dygraph.Pool2D(pool_size=2, pool_stride=2)
            self.fc = fluid.dygraph.Linear(4 * 3 * 3, 10, act="softmax")

        def forward(self, x):
            h = self.pool(self.conv(x))
            return self.fc(fluid.layers.reshape(h, [-1, 4 * 3 * 3]))

    data = rng.uniform(0, 1, (32, 1, 8, 8)).astype("float32")
    labels = (data.reshape(32, -1).sum(1) > 32).astype("int64").reshape(-1, 1)
    with fluid.dygraph.guard():
        net = Net()
        opt = fluid.optimizer.Adam(learning_rate=0.01, parameter_list=net.parameters())
        lines, losses = [], []
        for step in range(8):
            img = fluid.dygraph.to_variable(data[step % 2 * 16:step % 2 * 16 + 16])
            label = fluid.dygraph.to_variable(labels[step % 2 * 16:step % 2 * 16 + 16])
            prediction = net(img)
            avg_loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
            acc = fluid.layers.accuracy(prediction, label)
            avg_loss.backward()
            opt.minimize(avg_loss)
            net.clear_gradients()
            if step % 4 == 0:
                lines.append("epoch 0 step %d, loss %f, acc %f" % (step, avg_loss.numpy(), acc.numpy()))
            losses.append(float(avg_loss.numpy()))
            assert avg_loss.numpy()[0] == losses[-1]
    assert len(lines) == 2 and np.isfinite(np.array(losses).mean()) and losses[-1] < losses[0]


@pytest.mark.parametrize("make", [lambda t: fluid.layers.mean(t), lambda t: paddle.mean(t),
                                  lambda t: fluid.layers.reduce_sum(fluid.layers.cast(t, "int64"))])
def test_eager_idioms_on_shape_1_and_0d(make):
    with fluid.dygraph.guard():
        value = make(fluid.dygraph.to_variable(X.round())).numpy()
    want = np.asarray(value).reshape(()).item()
    assert isinstance(value, np.ndarray) and value.size == 1
    assert float(value) == float(want) and int(value) == int(want) and bool(value) is True
    assert "%f" % value == "%f" % want and "%d" % value == "%d" % int(want)
    assert "{:.3f}".format(value) == "{:.3f}".format(want) and f"{value:>8.1f}" == f"{want:>8.1f}"
    if value.dtype.kind == "i":
        assert operator.index(value) == want
    assert not isinstance(value * 2, ScalarArray)


def test_a_fetched_value_fed_back_is_a_plain_array():
    x = fluid.layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
    passed = static.Print(x, print_phase="backward")       # its kernel returns its input itself
    out = fluid.layers.scale(fluid.layers.reshape(passed, [1, 1]), 2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    (first,) = exe.run(feed={"x": np.array([1.5], "float32")}, fetch_list=[out])
    assert isinstance(first, ScalarArray)
    back = first.reshape(1)
    assert isinstance(back, ScalarArray)
    (second, same) = exe.run(feed={"x": back}, fetch_list=[out, passed])   # kernels never see the subclass
    assert float(second) == 6.0 and second.shape == (1, 1) and float(same) == 3.0
    with fluid.dygraph.guard():
        t = fluid.dygraph.to_variable(first)
        assert type(t._value) is np.ndarray
