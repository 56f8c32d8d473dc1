"""Whole-program gradients against central differences in float64: an MLP and a conv net with
batch norm (every parameter), and input gradients through a small transformer-style block."""
import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.nn import functional as F
from tests.ops.gradcheck import check_program_grad

rng = np.random.default_rng(42)


def test_mlp_gradients():
    feeds = {"x": rng.normal(size=(4, 5)), "y": rng.integers(0, 3, (4, 1)).astype(np.int64)}

    def build():
        x = static.data("x", [-1, 5], "float64")
        y = static.data("y", [-1, 1], "int64")
        h = static.nn.fc(x, size=6, activation="tanh")
        h = static.nn.fc(h, size=4, activation="sigmoid")
        logits = static.nn.fc(h, size=3)
        return paddle.mean(F.cross_entropy(logits, y, reduction="none"))

    params = ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0", "fc_2.w_0", "fc_2.b_0", "x"]
    check_program_grad(build, feeds, params, seed=1)


def test_conv_net_gradients():
    feeds = {"img": rng.normal(size=(3, 2, 4, 4)), "y": rng.integers(0, 3, (3, 1)).astype(np.int64)}

    def build():
        img = static.data("img", [-1, 2, 4, 4], "float64")
        y = static.data("y", [-1, 1], "int64")
        h = static.nn.conv2d(img, num_filters=3, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="tanh")
        h = F.avg_pool2d(h, kernel_size=2, stride=2)
        logits = static.nn.fc(h, size=3)
        return paddle.mean(F.cross_entropy(logits, y, reduction="none"))

    block_params = ["conv2d_0.w_0", "conv2d_0.b_0", "batch_norm_0.w_0", "batch_norm_0.b_0",
                    "fc_0.w_0", "fc_0.b_0", "img"]
    check_program_grad(build, feeds, block_params, seed=2)


def test_attention_block_input_gradients():
    """layer_norm, matmul attention with softmax, a residual add: gradient w.r.t. the input."""
    feeds = {"x": rng.normal(size=(2, 3, 4))}

    def build():
        x = static.data("x", [2, 3, 4], "float64")
        h = static.nn.layer_norm(x, begin_norm_axis=2)
        q = static.nn.fc(h, size=4, num_flatten_dims=2)
        k = static.nn.fc(h, size=4, num_flatten_dims=2)
        v = static.nn.fc(h, size=4, num_flatten_dims=2)
        scores = paddle.matmul(q, k, transpose_y=True) * 0.5
        out = paddle.matmul(F.softmax(scores), v) + x
        return paddle.mean(out * out)

    check_program_grad(build, feeds, ["x", "fc_0.w_0", "layer_norm_0.w_0", "layer_norm_0.b_0"], seed=3)
