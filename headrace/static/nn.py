"""``paddle.static.nn``: the 2.x names of the static layers."""
from ..nn import static_layers as _layers


def fc(x, size, num_flatten_dims=1, weight_attr=None, bias_attr=None, activation=None, name=None):
    return _layers.fc(x, size, num_flatten_dims, weight_attr, bias_attr, activation, name)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    return _layers.conv2d(input, num_filters, filter_size, stride, padding, dilation, groups, param_attr,
                          bias_attr, use_cudnn, act, name, data_format)


batch_norm = _layers.batch_norm
layer_norm = _layers.layer_norm


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    return _layers.embedding(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype)


# control flow (dygraph mode; static programs: NotImplementedError) and py_func (issue 16)
from ..nn.control_flow import case, cond, switch_case, while_loop  # noqa: E402
from ..nn.static_extras import py_func  # noqa: E402

__all__ = ["batch_norm", "conv2d", "embedding", "fc", "layer_norm", "case", "cond", "py_func", "switch_case",
           "while_loop"]
