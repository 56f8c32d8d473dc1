"""nn.Layer: registration, naming, traversal, modes, state dicts; fluid.dygraph compatibility."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
from headrace.core import context


@pytest.fixture(autouse=True)
def dygraph():
    with context.static_mode_guard(False):
        yield


class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = paddle.nn.Linear(3, 4)
        self.drop = paddle.nn.Dropout(0.5)
        self.fc2 = paddle.nn.Linear(4, 2, bias_attr=False)
        self.scale = self.create_parameter([2], default_initializer=paddle.nn.initializer.Constant(2.0))
        self.plain = [paddle.nn.Linear(2, 2)]    # a list is not registered (as the reference)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x))) * self.scale


def test_names_shapes_and_order():
    net = Net()
    names = [(n, p.name, p.shape) for n, p in net.named_parameters()]
    assert names == [("scale", "net_0.w_0", [2]),
                     ("fc1.weight", "linear_0.w_0", [3, 4]), ("fc1.bias", "linear_0.b_0", [4]),
                     ("fc2.weight", "linear_1.w_0", [4, 2])]
    assert [type(s).__name__ for s in net.sublayers()] == ["Linear", "Dropout", "Linear"]
    np.testing.assert_array_equal(net.scale.numpy(), [2.0, 2.0])
    assert not net.fc1.weight.stop_gradient and net.fc1.weight.trainable
    assert not net.fc1.bias.numpy().any()


def test_sequential_forms_and_add_sublayer():
    seq = paddle.nn.Sequential(("a", paddle.nn.Linear(2, 3)), ("b", paddle.nn.ReLU()))
    seq.add_sublayer("c", paddle.nn.Linear(3, 1))
    assert [n for n, _ in seq.named_children()] == ["a", "b", "c"] and len(seq) == 3
    plain = paddle.nn.Sequential(paddle.nn.Linear(2, 2), paddle.nn.Tanh())
    assert [n for n, _ in plain.named_children()] == ["0", "1"]
    assert seq(paddle.ones([5, 2])).shape == [5, 1]


def test_train_eval_switch_dropout():
    net = Net()
    x = paddle.ones([64, 3])
    paddle.seed(0)
    assert net.drop.training
    train_out = net.drop(paddle.ones([1000]))
    assert 300 < int((train_out.numpy() == 0).sum()) < 700
    net.eval()
    assert not net.drop.training and not net.fc1.training
    np.testing.assert_array_equal(net.drop(x).numpy(), x.numpy())
    net.train()
    assert net.drop.training


def test_state_dict_round_trip():
    a, b = Net(), Net()
    state = a.state_dict()
    assert list(state) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    missing, unexpected = b.set_state_dict({k: v.numpy() for k, v in state.items()})
    assert missing == [] and unexpected == []
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    with pytest.raises(ValueError, match="shape"):
        b.set_state_dict({"fc1.weight": np.zeros((2, 2), np.float32)})


def test_batch_norm_statistics_are_non_trainable_parameters():
    bn = paddle.nn.BatchNorm2D(3)
    assert [p.trainable for p in bn.parameters()] == [True, True, False, False]
    x = paddle.to_tensor(np.random.default_rng(0).standard_normal((4, 3, 2, 2)).astype(np.float32) + 5)
    bn(x)
    assert bn._mean.numpy().mean() > 0.4           # moved towards the batch mean (about 5)
    bn.eval()
    y = bn(x)
    assert y.shape == [4, 3, 2, 2]


def test_layer_runs_in_static_mode_too():
    with context.static_mode_guard(True):
        lin = paddle.nn.Linear(3, 2)
        x = paddle.static.data("x", [-1, 3])
        out = lin(x)
        assert out.shape == (-1, 2)
        assert [op.type for op in paddle.static.default_main_program().global_block().ops] == \
            ["matmul_v2", "elementwise_add"]
        assert lin.weight.name == "linear_0.w_0"


def test_fluid_dygraph_classes():
    with fluid.dygraph.guard():
        lin = fluid.dygraph.nn.Linear(10, 10, act="relu")
        out = lin(fluid.dygraph.to_variable(np.random.default_rng(0).uniform(-0.1, 0.1, [10, 10]).astype("float32")))
        assert out.shape == [10, 10] and (out.numpy() >= 0).all()
        conv = fluid.dygraph.Conv2D(3, 4, 3)
        assert conv.weight.shape == [4, 3, 3, 3]
        assert fluid.dygraph.Embedding([10, 10]).weight.shape == [10, 10]


def test_setattr_before_init_is_a_clear_error():
    class Bad(paddle.nn.Layer):
        def __init__(self):
            self.fc = paddle.nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match="super"):
        Bad()
