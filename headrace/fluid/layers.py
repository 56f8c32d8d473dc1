"""``paddle.fluid.layers``: the 1.x layer names and argument orders over headrace's layers."""
from ..nn import functional as _F
from ..nn.metric_ops import accuracy_counts
from ..nn.static_extras import auc  # noqa: F401  (1.x fluid.layers.auc = static.auc)
from ..nn import static_layers as _S
from ..nn import tensor as _T
from ..ops.apply import apply_op_single as _apply
from ..core.errors import AttrError, located


def data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=None, stop_gradient=True):
    return _S.legacy_data(name, shape, append_batch_size, dtype, lod_level, type, stop_gradient)


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    return _S.fc(input, size, num_flatten_dims, param_attr, bias_attr, act, name)


conv2d = _S.conv2d
create_global_var = _S.create_global_var
batch_norm = _S.batch_norm
layer_norm = _S.layer_norm


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """``fluid.layers.create_parameter``: the same as ``paddle.static.create_parameter`` (the
    caller's ``attr`` is not modified by ``name``)."""
    from ..static.param import create_parameter as _create

    return _create(shape, dtype, name, attr, is_bias, default_initializer)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    return _S.embedding(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, legacy=True)


def dropout(x, dropout_prob, is_test=None, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    mode = "upscale_in_train" if dropout_implementation == "upscale_in_train" else dropout_implementation
    return _F.dropout(x, dropout_prob, training=not is_test, mode=mode, name=name, seed=seed)


def _act(op_type):
    def layer(x, name=None):
        return _F._unary(op_type, x, name)
    layer.__name__ = op_type
    layer.__doc__ = f"``{op_type}`` of x."
    return layer


relu = _act("relu")
sigmoid = _act("sigmoid")
tanh = _act("tanh")
log = _act("log")
exp = _act("exp")
sqrt = _act("sqrt")
square = _act("square")
abs = _act("abs")  # noqa: A001


def gelu(x, approximate=False):
    return _F.gelu(x, approximate)


def leaky_relu(x, alpha=0.02, name=None):
    return _F.leaky_relu(x, alpha, name)


def softmax(input, use_cudnn=True, name=None, axis=-1):
    return _F.softmax(input, axis=axis, name=name)


def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    return _F.cross_entropy_probs(input, label, soft_label, ignore_index)


softmax_with_cross_entropy = _F.softmax_with_cross_entropy
square_error_cost = _F.square_error_cost


def accuracy(input, label, k=1, correct=None, total=None):  # noqa: A002
    """1.x ``accuracy``: the fraction of rows whose label is among the top-``k`` scores, shape [1]
    as 1.x (``acc_value[0]`` works; ``static.accuracy`` keeps the op's 0-D result); ``correct``/
    ``total`` (1.x programs make them shape [1]) receive the counts."""
    return accuracy_counts(input, label, k, correct, total, shape=[1])


pool2d = _F.pool2d
mean = _T.legacy_mean
reduce_mean = _T.reduce_mean
reduce_sum = _T.reduce_sum
reduce_max = _T.reduce_max
reduce_min = _T.reduce_min
fill_constant = _T.fill_constant


def assign(input, output=None):  # noqa: A002  (the 1.x keyword)
    """1.x ``assign(input, output=None)``: a copy of ``input`` (a Variable or a NumPy array)."""
    return _T.assign(input, output)


cast = _T.cast


def concat(input, axis=0, name=None):  # noqa: A002  (the 1.x keyword)
    """1.x ``concat(input, axis=0, name=None)``."""
    return _T.concat(input, axis, name)


slice = _T.slice  # noqa: A001


def sums(input, out=None):
    if out is not None:
        from ..ops.apply import apply_op

        apply_op("sum", {"X": list(input)}, outputs={"Out": out})
        return out
    return _T.add_n(input)


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    return _T.scale(x, scale, bias, bias_after_scale, act, name)


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    out = _T.reshape(x, shape, name)
    return out if act is None else _apply(act, {"X": out})


def transpose(x, perm, name=None):
    return _T.transpose(x, perm, name)


def split(input, num_or_sections, dim=-1, name=None):
    return _T.split(input, num_or_sections, dim, name)


def squeeze(input, axes, name=None):
    return _T.squeeze(input, axes, name)


def unsqueeze(input, axes, name=None):
    return _T.unsqueeze(input, axes, name)


def flatten(x, axis=1, name=None):
    """1.x flatten: a 2-D result [prod(dims[:axis]), prod(dims[axis:])]."""
    rank = len(x.shape)
    if not 0 <= axis <= rank:
        raise located(AttrError, f"flatten(): axis must be in [0, {rank}], got {axis}")
    if axis == 0:
        return _T.reshape(_T.flatten(x, 0, rank - 1) if rank else x, [1, -1], name)
    head = _T.flatten(x, 0, axis - 1) if axis > 1 else x
    if axis == rank:
        return _T.unsqueeze(head, [-1], name)
    return _T.flatten(head, 1, len(head.shape) - 1, name) if len(head.shape) > 2 else head


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    from ..nn.tensor import _key

    return _apply("matmul", {"X": x, "Y": y}, {"transpose_X": transpose_x, "transpose_Y": transpose_y,
                                               "alpha": float(alpha)}, name_key=_key("matmul", name))


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    return _T.mul(x, y, x_num_col_dims, y_num_col_dims, name)


def _elementwise(op_type):
    def layer(x, y, axis=-1, act=None, name=None):
        return _T._elementwise(op_type, x, y, axis, name, act)
    layer.__name__ = op_type
    return layer


elementwise_add = _elementwise("elementwise_add")
elementwise_sub = _elementwise("elementwise_sub")
elementwise_mul = _elementwise("elementwise_mul")
elementwise_div = _elementwise("elementwise_div")
elementwise_max = _elementwise("elementwise_max")
elementwise_min = _elementwise("elementwise_min")
elementwise_pow = _elementwise("elementwise_pow")


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    return _T.uniform(shape, dtype, min, max, seed, name)


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32", name=None):
    return _T.gaussian(shape, mean, std, seed, dtype, name)


def zeros(shape, dtype, force_cpu=False, name=None):
    return _T.zeros(shape, dtype, name)


def ones(shape, dtype, force_cpu=False, name=None):
    return _T.ones(shape, dtype, name)


# --- learning-rate decays (ops on a step counter; optimizer/lr_static.py) and 1.x losses (nn/loss.py) ----
from ..optimizer.lr_static import (cosine_decay, exponential_decay, inverse_time_decay,  # noqa: E402,F401
                                   linear_lr_warmup, natural_exp_decay, noam_decay, piecewise_decay,
                                   polynomial_decay)
from ..nn.loss import (dice_loss, label_smooth, log_loss, npair_loss,  # noqa: E402,F401
                       sigmoid_cross_entropy_with_logits)
from ..nn.loss_fluid import (huber_loss, kldiv_loss, margin_rank_loss, mse_loss, rank_loss,  # noqa: E402,F401
                             smooth_l1)
