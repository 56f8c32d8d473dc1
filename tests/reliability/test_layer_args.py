"""Issue 15 item 7: bad layer, functional and optimizer arguments raise headrace's typed errors
naming the user's line."""
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.errors import ArgTypeError, AttrError, HeadraceError, ShapeError

THIS = "test_layer_args.py"


def _static_inputs():
    x = static.data("x", [None, 4], "float32")
    img = static.data("img", [None, 4, 8, 8], "float32")
    ids = static.data("ids", [None, 1], "int64")
    return x, img, ids


STATIC_CASES = {
    "fc size 0": (AttrError, lambda x, img, ids: static.nn.fc(x, size=0)),
    "fluid fc size -1": (AttrError, lambda x, img, ids: fluid.layers.fc(x, size=-1)),
    "fc size 2.5": (AttrError, lambda x, img, ids: static.nn.fc(x, size=2.5)),
    "fc num_flatten_dims 0": (ShapeError, lambda x, img, ids: static.nn.fc(x, size=2, num_flatten_dims=0)),
    "dropout p 1.5": (AttrError, lambda x, img, ids: paddle.nn.functional.dropout(x, p=1.5)),
    "dropout p -0.1": (AttrError, lambda x, img, ids: paddle.nn.functional.dropout(x, p=-0.1)),
    "fluid dropout 2": (AttrError, lambda x, img, ids: fluid.layers.dropout(x, dropout_prob=2.0)),
    "fluid dropout nan": (AttrError, lambda x, img, ids: fluid.layers.dropout(x, dropout_prob=float("nan"))),
    "conv groups not dividing channels": (AttrError, lambda x, img, ids: static.nn.conv2d(
        img, num_filters=6, filter_size=3, groups=3)),
    "conv groups 0": (AttrError, lambda x, img, ids: static.nn.conv2d(img, num_filters=2, filter_size=3, groups=0)),
    "conv num_filters 0": (AttrError, lambda x, img, ids: static.nn.conv2d(img, num_filters=0, filter_size=3)),
    "conv filter_size 0": (AttrError, lambda x, img, ids: static.nn.conv2d(img, num_filters=2, filter_size=0)),
    "conv stride 0": (AttrError, lambda x, img, ids: static.nn.conv2d(img, num_filters=2, filter_size=3, stride=0)),
    "conv dilation 0": (AttrError, lambda x, img, ids: static.nn.conv2d(img, num_filters=2, filter_size=3,
                                                                         dilation=0)),
    "conv data_format": (AttrError, lambda x, img, ids: static.nn.conv2d(img, 2, 3, data_format="NHCW")),
    "embedding size 0": (ShapeError, lambda x, img, ids: static.nn.embedding(ids, size=[0, 4])),
    "embedding size [10]": (AttrError, lambda x, img, ids: fluid.layers.embedding(ids, size=[10])),
    "flatten axis 9": (AttrError, lambda x, img, ids: fluid.layers.flatten(x, axis=9)),
    "leaky_relu slope 'a'": (ArgTypeError, lambda x, img, ids: paddle.nn.functional.leaky_relu(x, negative_slope="a")),
    "scale 'a'": (ArgTypeError, lambda x, img, ids: fluid.layers.scale(x, scale="a")),
    "cross_entropy reduction": (AttrError, lambda x, img, ids: paddle.nn.functional.cross_entropy(
        x, ids, reduction="avg")),
    "pool2d pool_type": (AttrError, lambda x, img, ids: fluid.layers.pool2d(img, 2, pool_type="median")),
    "fc input not a Variable": (ArgTypeError, lambda x, img, ids: static.nn.fc([[1.0]], size=2)),
    "data shape not a list": (ArgTypeError, lambda x, img, ids: static.data("y", 5, "float32")),
}


@pytest.mark.parametrize("case", sorted(STATIC_CASES))
def test_static_layer_arguments(case):
    cls, build = STATIC_CASES[case]
    inputs = _static_inputs()
    with pytest.raises(cls) as info:
        build(*inputs)
    assert isinstance(info.value, HeadraceError)
    assert THIS in str(info.value), str(info.value)


def _params():
    return paddle.nn.Linear(2, 2).parameters() if paddle.in_dynamic_mode() else None


LAYER_CASES = {
    "Linear 0": (AttrError, lambda: paddle.nn.Linear(0, 4)),
    "Dropout 2": (AttrError, lambda: paddle.nn.Dropout(2)),
    "Conv2D groups": (AttrError, lambda: paddle.nn.Conv2D(4, 6, 3, groups=3)),
    "Conv2D out 0": (AttrError, lambda: paddle.nn.Conv2D(4, 0, 3)),
    "Conv2D kernel 0": (AttrError, lambda: paddle.nn.Conv2D(4, 2, 0)),
    "Conv2D stride 0": (AttrError, lambda: paddle.nn.Conv2D(4, 2, 3, stride=0)),
    "Conv2D padding -1": (AttrError, lambda: paddle.nn.Conv2D(4, 2, 3, padding=-1)),
    "Embedding 0": (AttrError, lambda: paddle.nn.Embedding(0, 4)),
    "BatchNorm2D 0": (ShapeError, lambda: paddle.nn.BatchNorm2D(0)),
    "LayerNorm 0": (ShapeError, lambda: paddle.nn.LayerNorm(0)),
    "SGD lr -1": (AttrError, lambda: paddle.optimizer.SGD(learning_rate=-1.0)),
    "Momentum momentum 'a'": (ArgTypeError, lambda: paddle.optimizer.Momentum(
        learning_rate=0.1, momentum="a", parameters=_params())),
    "Adam beta1 2": (AttrError, lambda: paddle.optimizer.Adam(learning_rate=0.1, beta1=2.0, parameters=_params())),
    "ClipGradByNorm 0": (AttrError, lambda: paddle.nn.ClipGradByNorm(0.0)),
    "StepDecay gamma 2": (AttrError, lambda: paddle.optimizer.lr.StepDecay(0.1, step_size=2, gamma=2.0)),
}


@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_layer_and_optimizer_arguments_in_both_modes(case):
    cls, build = LAYER_CASES[case]
    for dygraph in (False, True):
        if dygraph:
            paddle.disable_static()
        try:
            with pytest.raises(cls) as info:
                build()
        finally:
            paddle.enable_static()
        assert isinstance(info.value, HeadraceError)
        assert THIS in str(info.value), str(info.value)
