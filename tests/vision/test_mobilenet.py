"""MobileNetV1/V2: parameter counts worked out here from the architectures (and the well-known
totals), forward shapes, one training step in both modes."""
import numpy as np
import pytest

import headrace as paddle
from tests.vision.steps import check_static_sgd_step
from headrace.core import context
from headrace.vision import models
from tests.vision.test_models import counts


@pytest.fixture(autouse=True)
def eager_mode():
    with context.static_mode_guard(False):
        yield


def conv_bn(cin, cout, k, groups=1):
    """(trainable, all) of a bias-free conv + batch norm (running mean and variance not trainable)."""
    weights = cout * (cin // groups) * k * k
    return weights + 2 * cout, weights + 4 * cout


def add(*pairs):
    return tuple(map(sum, zip(*pairs)))


def v1_counts(num_classes):
    blocks = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)] \
        + [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]
    parts = [conv_bn(3, 32, 3)]
    for cin, cout, _ in blocks:
        parts += [conv_bn(cin, cin, 3, groups=cin), conv_bn(cin, cout, 1)]
    fc = 1024 * num_classes + num_classes
    return add(*parts, (fc, fc))


def v2_counts(num_classes):
    setting = [(1, 16, 1), (6, 24, 2), (6, 32, 3), (6, 64, 4), (6, 96, 3), (6, 160, 3), (6, 320, 1)]
    parts, cin = [conv_bn(3, 32, 3)], 32
    for t, c, n in setting:
        for _ in range(n):
            hidden = cin * t
            if t != 1:
                parts.append(conv_bn(cin, hidden, 1))
            parts += [conv_bn(hidden, hidden, 3, groups=hidden), conv_bn(hidden, c, 1)]
            cin = c
    parts.append(conv_bn(320, 1280, 1))
    fc = 1280 * num_classes + num_classes
    return add(*parts, (fc, fc))


def test_mobilenet_v1_parameters():
    net = models.mobilenet_v1()
    assert counts(net) == v1_counts(1000) == (4231976, 4253864)   # the well-known MobileNet totals
    assert [name for name, _ in net.named_children()][1:3] == ["conv2_1", "conv2_2"]
    half = models.MobileNetV1(scale=0.5, num_classes=10)
    assert list(half(paddle.rand([1, 3, 32, 32])).shape) == [1, 10]


def test_mobilenet_v2_parameters():
    net = models.mobilenet_v2()
    assert counts(net) == v2_counts(1000)
    assert counts(net)[0] == 3504872          # the well-known MobileNetV2 (1.0) trainable count
    assert len(net.features) == 1 + 17 + 1
    assert net.features[3].use_res_connect and not net.features[2].use_res_connect   # 2nd / 1st block of c=24
    with pytest.raises(NotImplementedError, match="pretrained"):
        models.mobilenet_v2(pretrained=True)


@pytest.mark.parametrize("build", [lambda: models.MobileNetV1(scale=0.25, num_classes=3),
                                   lambda: models.MobileNetV2(scale=0.25, num_classes=3)], ids=["v1", "v2"])
def test_mobilenet_training_step_eager_and_static(build):
    # (batch norm over 2 images of 1x1 features is too stiff for a loss-decrease check: the step
    # itself is checked, w1 = w0 - lr * grad for every parameter)
    x = np.random.default_rng(0).standard_normal([2, 3, 32, 32]).astype("float32")
    net = build()
    opt = paddle.optimizer.SGD(learning_rate=1e-3, parameters=net.parameters())
    loss = paddle.mean(net(paddle.to_tensor(x)) ** 2)
    loss.backward()
    trainable = [p for p in net.parameters() if p.trainable]
    before = [(p.numpy().copy(), p.grad.numpy().copy()) for p in trainable]
    opt.step()
    assert np.isfinite(float(loss))
    for p, (w0, g) in zip(trainable, before):
        np.testing.assert_allclose(p.numpy(), w0 - 1e-3 * g, rtol=1e-6, atol=1e-7)
    assert check_static_sgd_step(build, x, 1e-3) == len(trainable)
