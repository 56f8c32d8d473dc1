"""The in-place activations of ``paddle.nn.functional``: ``relu_``, ``tanh_``, ``softmax_``,
``elu_``, ``hardtanh_``, ``leaky_relu_``, ``thresholded_relu_`` (dygraph mode).

Each computes the out-of-place form and then makes ``x`` *be* the result: ``x`` takes the new
value and the result's place in the autograd graph, and is returned.  Ops that already read the
old ``x`` keep what they saved (the tape saves arrays, and their graph edges point at the node
that produced the old ``x``), so gradients stay right.  As in the reference, a leaf Tensor that
requires a gradient cannot be overwritten (its gradient would have nowhere to go).  Static mode
has no in-place form here: the error says to use the out-of-place function.
"""
from __future__ import annotations

from ..core import context
from ..core.errors import AttrError, located
from ..eager import tape
from . import functional as F
from . import functional_activation as FA


def _inplace(func, name):
    def inplace(x, *args, **kwargs):
        if context.in_static_mode():
            raise located(NotImplementedError, f"{name}(): in-place forms run in dygraph mode; in static mode use "
                                               f"{func.__name__}(x) and its result")
        if x._node is None and not x.stop_gradient and tape.grad_enabled:
            raise located(AttrError, f"{name}(): the leaf Tensor {x.name!r} requires a gradient and cannot be "
                                     "overwritten in place")
        out = func(x, *args, **kwargs)
        x._value, x._node, x._out_index, x.stop_gradient = out._value, out._node, out._out_index, out.stop_gradient
        return x
    inplace.__name__ = name
    inplace.__doc__ = f"In-place ``{func.__name__}``: ``x`` becomes the result (dygraph mode)."
    return inplace


relu_ = _inplace(F.relu, "relu_")
tanh_ = _inplace(F.tanh, "tanh_")
softmax_ = _inplace(F.softmax, "softmax_")
leaky_relu_ = _inplace(F.leaky_relu, "leaky_relu_")
elu_ = _inplace(FA.elu, "elu_")
hardtanh_ = _inplace(FA.hardtanh, "hardtanh_")
thresholded_relu_ = _inplace(FA.thresholded_relu, "thresholded_relu_")
