"""paddle.summary and paddle.flops on small nets, against counts worked out by hand here (and the
reference's documented LeNet table)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn as nn
import headrace.static as static
from headrace.core import context


@pytest.fixture(autouse=True)
def eager_mode():
    with context.static_mode_guard(False):
        yield


# the reference's documented output for LeNet on (1, 1, 28, 28) (paddle.summary docstring)
LENET_TABLE = """
---------------------------------------------------------------------------
 Layer (type)       Input Shape          Output Shape         Param #
===========================================================================
   Conv2D-1       [[1, 1, 28, 28]]      [1, 6, 28, 28]          60
    ReLU-1        [[1, 6, 28, 28]]      [1, 6, 28, 28]           0
  MaxPool2D-1     [[1, 6, 28, 28]]      [1, 6, 14, 14]           0
   Conv2D-2       [[1, 6, 14, 14]]     [1, 16, 10, 10]         2,416
    ReLU-2       [[1, 16, 10, 10]]     [1, 16, 10, 10]           0
  MaxPool2D-2    [[1, 16, 10, 10]]      [1, 16, 5, 5]            0
   Linear-1          [[1, 400]]            [1, 120]           48,120
   Linear-2          [[1, 120]]            [1, 84]            10,164
   Linear-3          [[1, 84]]             [1, 10]              850
===========================================================================
Total params: 61,610
Trainable params: 61,610
Non-trainable params: 0
---------------------------------------------------------------------------
Input size (MB): 0.00
Forward/backward pass size (MB): 0.11
Params size (MB): 0.24
Estimated Total Size (MB): 0.35
---------------------------------------------------------------------------
"""


def normalized(text):
    return [line.split() for line in text.strip().splitlines()]


def test_lenet_summary_is_the_reference_table(capsys):
    info = paddle.summary(paddle.vision.LeNet(), (1, 1, 28, 28))
    assert info == {"total_params": 61610, "trainable_params": 61610}
    assert normalized(capsys.readouterr().out) == normalized(LENET_TABLE)


class Block(nn.Layer):
    """A layer with its own parameter and sublayers: its row counts only its own parameter."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 4, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(4)
        self.gate = self.create_parameter([4, 1, 1])

    def forward(self, x):
        return nn.functional.relu(self.bn(self.conv(x)) * self.gate)


class TwoInputs(nn.Layer):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5 + 7, 2))

    def forward(self, image, extra):
        features = nn.functional.adaptive_avg_pool2d(self.block(image), 5)
        return self.head[1](paddle.concat([self.head[0](features), extra], axis=1))


def test_summary_counts_trainable_and_running_statistics(capsys):
    net = TwoInputs()
    info = paddle.summary(net, [(None, 3, 10, 10), (1, 7)], dtypes=["float32", "float32"])
    conv, bn_trainable, bn_stats, gate, linear = 3 * 4 * 9, 2 * 4, 2 * 4, 4, (107 * 2 + 2)
    total = conv + bn_trainable + bn_stats + gate + linear
    assert info == {"total_params": total, "trainable_params": total - bn_stats}
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if "-" in line[:20] and "[" in line}
    assert rows["Block-1"][-1] == "4" and rows["Conv2D-1"][-1] == "108" and rows["BatchNorm2D-1"][-1] == "16"
    assert rows["Linear-1"][-1] == "216" and "Flatten-1" in rows and "Sequential-1" not in rows
    # outputs: conv, bn [1,4,10,10] each, block [1,4,10,10], flatten [1,100] (head[0] is called), linear [1,2]
    outputs = 3 * 400 + 100 + 2
    assert f"Forward/backward pass size (MB): {2 * outputs * 4 / 1024 ** 2:0.2f}" in out
    assert f"Input size (MB): {(300 + 7) * 4 / 1024 ** 2:0.2f}" in out
    assert f"Non-trainable params: {bn_stats:,}" in out
    assert net.training      # restored after the eval-mode pass


def test_summary_with_input_dict_and_errors(capsys):
    class DictNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, inputs):
            return self.fc(inputs["a"] + inputs["b"])

    info = paddle.summary(DictNet(), input={"a": paddle.rand([2, 3]), "b": paddle.rand([2, 3])})
    assert info == {"total_params": 8, "trainable_params": 8}
    assert "[[2, 3]]" in capsys.readouterr().out
    with pytest.raises(ValueError, match="cannot be None"):
        paddle.summary(DictNet())
    with pytest.raises(ValueError, match="only the dim of batch_size"):
        paddle.summary(nn.Linear(3, 2), (-1, None))
    # a network without sublayers gets its own row
    assert paddle.summary(nn.Linear(3, 2), (4, 3)) == {"total_params": 8, "trainable_params": 8}


def test_lenet_flops_per_layer(capsys):
    # conv1: 6*28*28 outputs * (1*9 + 1); conv2: 16*10*10 * (6*25 + 1); linears: in * out
    want = 4704 * 10 + 1600 * 151 + 400 * 120 + 120 * 84 + 84 * 10
    assert paddle.flops(paddle.vision.LeNet(), [1, 1, 28, 28], print_detail=True) == want == 347560
    out = capsys.readouterr().out
    assert "Total Flops: 347560     Total Params: 61610" in out
    assert "|   conv2d_1   |  [1, 6, 14, 14] | [1, 16, 10, 10] |  2416  | 241600 |" in out


def test_flops_rules_by_layer_type(capsys):
    net = nn.Sequential(
        nn.Conv2D(4, 8, 3, padding=1, groups=2, bias_attr=False),   # 8*6*6 * (4/2 * 9) = 5184
        nn.BatchNorm2D(8),                                           # 2 * 288 = 576
        nn.LeakyReLU(),                                              # 288
        nn.AvgPool2D(2, 2),                                          # 8*3*3 = 72
        nn.AdaptiveAvgPool2D(1),                                     # (3*3 + 1) * 8 = 80
        nn.Flatten(),                                                # not counted: 0
        nn.Dropout(0.5),                                             # 0
        nn.Linear(8, 5),                                             # 8 * 5 = 40
        nn.Sigmoid(),                                                # no rule: 0
    )
    want = 5184 + 576 + 288 + 72 + 80 + 40
    assert paddle.flops(net, [1, 4, 6, 6]) == want
    out = capsys.readouterr().out
    assert "Cannot find suitable count function for" in out and "Sigmoid" in out
    assert f"Total Flops: {want}     Total Params: {8 * 2 * 9 + 4 * 8 + 8 * 5 + 5}" in out
    assert net.training

    def count_sigmoid(layer, inputs, output):
        layer.total_ops += int(np.prod(output.shape)) * 4      # the reference's style: add to total_ops
    assert paddle.flops(net, [1, 4, 6, 6], custom_ops={nn.Sigmoid: count_sigmoid}) == want + 20
    assert "Customize Function has been applied to" in capsys.readouterr().out


def test_flops_of_a_static_program():
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [1, 3, 8, 8], "float32")
            y = paddle.nn.Conv2D(3, 4, 3)(x)                 # conv2d: 4*6*6 * 3*9 = 3888; bias add: 144
            y = paddle.nn.BatchNorm2D(4)(y)                   # 2 * 144 = 288
            y = paddle.nn.MaxPool2D(2, 2)(y)                  # pool2d: (2*2 + 1) * 36 = 180
            y = static.nn.fc(paddle.flatten(y, 1), 5)         # mul: 36 * 5 = 180; bias add: 5
    assert paddle.flops(main, None) == 3888 + 144 + 288 + 180 + 180 + 5
    with pytest.warns(UserWarning, match="must be an instance"):
        assert paddle.flops("not a net", [1]) == -1


def test_summary_in_static_mode_warns_and_counts(capsys):
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            net = paddle.vision.LeNet()
            with pytest.warns(UserWarning, match="static graph mode"):
                info = paddle.summary(net, (1, 1, 28, 28))
    assert info == {"total_params": 61610, "trainable_params": 61610}
    assert normalized(capsys.readouterr().out) == normalized(LENET_TABLE)
