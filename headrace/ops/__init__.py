"""The operator registry and every op family.  Importing this package registers all ops (the
Python operators of Variables and Tensors are bound by ``headrace.nn.operators``)."""
from . import registry  # noqa: F401  (installs the op checker into core)
from . import creation, elementwise  # noqa: F401
from . import activation, reduce, loss, linalg, shape, concat_slice, nn, conv, norm, optim, clip  # noqa: F401
from . import collective, fused  # noqa: F401
from . import optim_more, loss_more, resize, lr_schedule  # noqa: F401
from . import coalesce  # noqa: F401
from . import debug  # noqa: F401
from . import metric  # noqa: F401
from . import math_unary, math_binary, math_extra, search, indexing, manip, dynamic_shape, random_more  # noqa: F401  (tensor ops)
from . import cumulative, counting  # noqa: F401  (tensor ops)
from . import activation_ext, conv3d, conv_transpose, group_norm, pool, pool3d, spectral_norm  # noqa: F401  (nn layers)
from . import conv_bias  # noqa: F401  (eager F.conv2d with a bias)
from . import pool2d  # noqa: F401
from . import rnn_fused  # noqa: F401  (the fused recurrent op)
from . import softmax  # noqa: F401  (softmax and its gradient)
from .apply import apply_op, apply_op_single
from .registry import OpDef, has_op, lookup, registered_ops

__all__ = ["OpDef", "apply_op", "apply_op_single", "has_op", "lookup", "registered_ops"]
