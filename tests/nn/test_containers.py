"""LayerList, LayerDict, ParameterList, ParameterDict, their aliases and nn.Parameter: registration
(parameters(), state_dict keys, train/eval reach the members), list/dict behaviour, both modes."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context
from headrace.runtime import Executor, Scope

nn = paddle.nn


def test_layer_list_registers_and_behaves_like_a_list():
    with context.static_mode_guard(False):
        layers = nn.LayerList([nn.Linear(2, 3), nn.Linear(3, 4)])
        layers.append(nn.Linear(4, 1))
        layers.insert(1, nn.ReLU())
        assert len(layers) == 4 and isinstance(layers[1], nn.ReLU) and isinstance(layers[-1], nn.Linear)
        assert list(layers.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"]
        del layers[1]
        assert [type(m).__name__ for m in layers] == ["Linear", "Linear", "Linear"]
        assert len(layers[1:]) == 2 and isinstance(layers[1:], nn.LayerList)
        layers.eval()
        assert not any(m.training for m in layers)
        with pytest.raises(IndexError):
            layers[5]
        with pytest.raises(TypeError):
            layers.append(3)


class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([nn.Linear(3, 3) for _ in range(2)])
        self.heads = nn.LayerDict({"a": nn.Linear(3, 1), "b": nn.Linear(3, 2)})
        self.scales = nn.ParameterList([self.create_parameter([3]) for _ in range(2)])

    def forward(self, x):
        for block, scale in zip(self.blocks, self.scales):
            x = paddle.nn.functional.relu(block(x)) * scale
        return paddle.concat([self.heads["a"](x), self.heads["b"](x)], axis=1)


def test_containers_inside_a_layer_train_in_both_modes():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    with context.static_mode_guard(False):
        net = _Net()
        assert len(net.parameters()) == 4 + 4 + 2
        assert "heads.b.weight" in net.state_dict() and "scales.1" in net.state_dict()
        values = {k: v.numpy() for k, v in net.state_dict().items()}
        eager_out = net(paddle.to_tensor(x)).numpy()
        paddle.sum(net(paddle.to_tensor(x))).backward()
        assert all(p.grad is not None for p in net.parameters())
    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        xs = static.data("x", [4, 3], "float32")
        snet = _Net()
        out = snet(xs)
    scope = Scope()
    Executor().run(startup, scope=scope)
    for key, param in snet.state_dict().items():
        scope.var(param.name).get_tensor().set(values[key])
    static_out, = Executor().run(main, feed={"x": x}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(static_out, eager_out, rtol=1e-6)


def test_layer_dict_and_parameter_dict():
    with context.static_mode_guard(False):
        d = nn.LayerDict([("x", nn.ReLU())])
        d["y"] = nn.Tanh()
        d.update({"z": nn.Sigmoid()})
        assert list(d.keys()) == ["x", "y", "z"] and "y" in d and len(d) == 3
        assert isinstance(d.pop("x"), nn.ReLU) and len(d) == 2
        p = nn.ParameterDict({"w": nn.Parameter(paddle.to_tensor([1.0, 2.0]))})
        p["v"] = nn.Parameter(np.zeros((2, 2), np.float32), requires_grad=False)
        assert [k for k, _ in p.named_parameters()] == ["w", "v"]
        assert p["v"].stop_gradient and not p["w"].stop_gradient
        with pytest.raises(TypeError):
            p["u"] = paddle.to_tensor([1.0])


def test_parameter_and_aliases():
    with context.static_mode_guard(False):
        w = nn.Parameter(paddle.to_tensor([1.0, 2.0, 3.0]))
        assert w.trainable and w.persistable and w.shape == [3] and w.dtype == paddle.float32
        assert nn.Parameter().shape == [0]
        layer = nn.Layer()
        layer.w = w
        assert layer.parameters() == [w]
        (w * w).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])
    assert nn.Module is nn.Layer and nn.ModuleList is nn.LayerList and nn.ModuleDict is nn.LayerDict
