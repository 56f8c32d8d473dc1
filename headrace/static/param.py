"""``paddle.static.create_parameter`` with the reference's signature (``name`` third)."""
from __future__ import annotations

import copy

from ..nn import layer
from ..nn.param_attr import ParamAttr


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """Create a parameter (a learnable persistable variable) in the default main program and its
    initializer in the default startup program; in dygraph mode an eager Parameter, initialized
    now (as the reference's ``paddle.create_parameter``).  ``name`` names it (it takes precedence over
    ``attr.name``; the caller's ``attr`` object is not modified); ``attr`` is a ``ParamAttr``;
    without ``default_initializer`` a bias starts at 0 and a weight with Xavier."""
    attr = ParamAttr.to_attr(attr)
    if name is not None and attr is not False:
        attr = copy.copy(attr)
        attr.name = name
    return layer.create_parameter(shape, dtype, attr, is_bias, default_initializer)
