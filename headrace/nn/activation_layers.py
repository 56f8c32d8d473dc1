"""The ``paddle.nn`` activation layers: each runs its ``nn.functional`` form (both modes).

Constructor arguments and defaults are the reference's (``nn.Hardsigmoid`` uses slope 1/6 and
offset 0.5 as ``F.hardsigmoid``; ``nn.RReLU`` draws slopes while training and uses
``(lower + upper) / 2`` in eval mode; ``nn.PReLU`` learns ``num_parameters`` slopes, 1 or one
per channel, initialised to ``init``).
"""
from __future__ import annotations

import numbers

from ..core.errors import AttrError, located
from . import functional_activation as FA
from .initializer import Constant
from .layer import Layer
from .layers import _activation

CELU = _activation("CELU", FA.celu, alpha=1.0)
ELU = _activation("ELU", FA.elu, alpha=1.0)
GLU = _activation("GLU", FA.glu, axis=-1)
Hardshrink = _activation("Hardshrink", FA.hardshrink, threshold=0.5)
Hardsigmoid = _activation("Hardsigmoid", FA.hardsigmoid)
Hardswish = _activation("Hardswish", FA.hardswish)
Hardtanh = _activation("Hardtanh", FA.hardtanh, min=-1.0, max=1.0)
LogSigmoid = _activation("LogSigmoid", FA.log_sigmoid)
LogSoftmax = _activation("LogSoftmax", FA.log_softmax, axis=-1)
Mish = _activation("Mish", FA.mish)
ReLU6 = _activation("ReLU6", FA.relu6)
SELU = _activation("SELU", FA.selu, scale=1.0507009873554804934193349852946,
                   alpha=1.6732632423543772848170429916717)
SiLU = _activation("SiLU", FA.silu)
Silu = SiLU
Softmax2D = _activation("Softmax2D", FA.softmax2d)
Softplus = _activation("Softplus", FA.softplus, beta=1, threshold=20)
Softshrink = _activation("Softshrink", FA.softshrink, threshold=0.5)
Softsign = _activation("Softsign", FA.softsign)
Swish = _activation("Swish", FA.swish)
Tanhshrink = _activation("Tanhshrink", FA.tanhshrink)
ThresholdedReLU = _activation("ThresholdedReLU", FA.thresholded_relu, threshold=1.0, value=0.0)


class Maxout(Layer):
    """Max over ``groups`` consecutive channels (``F.maxout``)."""

    def __init__(self, groups, axis=1, name=None):
        super().__init__()
        self._groups, self._axis, self._name = groups, axis, name

    def forward(self, x):
        return FA.maxout(x, self._groups, self._axis, self._name)

    def extra_repr(self):
        return f"groups={self._groups}, axis={self._axis}"


class RReLU(Layer):
    """Randomized leaky relu: a slope drawn from U(lower, upper) while training, the mean in eval."""

    def __init__(self, lower=1.0 / 8.0, upper=1.0 / 3.0, name=None):
        super().__init__()
        self._lower, self._upper, self._name = lower, upper, name

    def forward(self, x):
        return FA.rrelu(x, self._lower, self._upper, training=self.training, name=self._name)

    def extra_repr(self):
        return f"lower={self._lower}, upper={self._upper}"


class PReLU(Layer):
    """Parametric relu: ``x if x > 0 else weight * x`` with ``num_parameters`` learned slopes
    (1, or the number of channels), initialised to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None):
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, numbers.Integral) \
                or num_parameters <= 0:
            raise located(AttrError, f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        self._num_parameters, self._init = int(num_parameters), float(init)
        self._data_format, self._name = data_format, name
        self._weight = self.create_parameter([self._num_parameters], weight_attr,
                                             default_initializer=Constant(self._init))

    def forward(self, x):
        return FA.prelu(x, self._weight, self._data_format, self._name)

    def extra_repr(self):
        return f"num_parameters={self._num_parameters}, data_format={self._data_format}, init={self._init}"
