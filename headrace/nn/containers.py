"""``paddle.nn`` containers: ``LayerList``, ``LayerDict``, ``ParameterList``, ``ParameterDict``
(and the reference's aliases ``Module``, ``ModuleList``, ``ModuleDict``), and ``nn.Parameter``.

Sublayers and parameters held by a container are registered under their index (``"0"``,
``"1"`` ...) or key, so ``parameters()``, ``state_dict()`` (``layers.0.weight``) and
``train()``/``eval()`` reach them, as in the reference.
"""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ..core.errors import ArgTypeError, AttrError, located
from ..core import names
from ..eager.tensor import Parameter as _EagerParameter
from ..eager.tensor import Tensor
from .layer import _PARAMETER_TYPES, Layer


class LayerList(Layer):
    """A list of sublayers, registered as ``"0"``, ``"1"``, ... ."""

    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def _index(self, index):
        if not isinstance(index, numbers.Integral) or isinstance(index, bool):
            raise located(ArgTypeError, f"LayerList indices must be integers, got {type(index).__name__}")
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"LayerList index {index} out of range for {size} layers")
        return index + size if index < 0 else int(index)

    def __getitem__(self, index):
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return type(self)(layers[index])
        return layers[self._index(index)]

    def __setitem__(self, index, layer):
        self._sub_layers[str(self._index(index))] = _checked_layer(layer)

    def __delitem__(self, index):
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            del layers[index]
        else:
            del layers[self._index(index)]
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self._sub_layers[str(i)] = layer

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(list(self._sub_layers.values()))

    def append(self, sublayer):
        """Add ``sublayer`` at the end; returns this list."""
        self._sub_layers[str(len(self))] = _checked_layer(sublayer)
        return self

    def insert(self, index, sublayer):
        """Insert ``sublayer`` before position ``index``."""
        layers = list(self._sub_layers.values())
        layers.insert(index, _checked_layer(sublayer))
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self._sub_layers[str(i)] = layer

    def extend(self, sublayers):
        """Append every layer of ``sublayers``; returns this list."""
        for layer in sublayers:
            self.append(layer)
        return self

    def forward(self, *inputs, **kwargs):
        raise located(NotImplementedError, "LayerList is a container: call its layers, not the list")


def _checked_layer(layer):
    if not isinstance(layer, Layer):
        raise located(ArgTypeError, f"expected a Layer, got {type(layer).__name__}")
    return layer


class LayerDict(Layer):
    """An ordered dict of sublayers, registered under their keys."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, sublayer):
        self.add_sublayer(key, sublayer)

    def __delitem__(self, key):
        del self._sub_layers[key]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        self._sub_layers.clear()

    def pop(self, key):
        return self._sub_layers.pop(key)

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers):
        """Add (key, layer) pairs from a mapping or an iterable of pairs."""
        items = sublayers.items() if isinstance(sublayers, (dict, LayerDict)) else sublayers
        for pair in items:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise located(AttrError, f"LayerDict.update: expected (key, layer) pairs, got {pair!r}")
            self.add_sublayer(pair[0], pair[1])

    def forward(self, *inputs, **kwargs):
        raise located(NotImplementedError, "LayerDict is a container: call its layers, not the dict")


def _checked_parameter(param):
    if not isinstance(param, _PARAMETER_TYPES):
        raise located(ArgTypeError, f"expected a Parameter, got {type(param).__name__}")
    return param


class ParameterList(Layer):
    """A list of parameters, registered as ``"0"``, ``"1"``, ... ."""

    def __init__(self, parameters=None):
        super().__init__()
        for param in parameters or ():
            self.append(param)

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def __setitem__(self, index, param):
        keys = list(self._parameters)
        self._parameters[keys[index]] = _checked_parameter(param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters.values()))

    def append(self, parameter):
        """Add ``parameter`` at the end; returns this list."""
        self._parameters[str(len(self))] = _checked_parameter(parameter)
        return self

    def extend(self, parameters):
        for param in parameters:
            self.append(param)
        return self

    def forward(self, *inputs, **kwargs):
        raise located(NotImplementedError, "ParameterList is a container of parameters; it has no forward")


class ParameterDict(Layer):
    """An ordered dict of parameters, registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, param):
        self.add_parameter(key, _checked_parameter(param))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters):
        items = parameters.items() if isinstance(parameters, (dict, collections.abc.Mapping, ParameterDict)) \
            else parameters
        for key, param in items:
            self[key] = param

    def forward(self, *inputs, **kwargs):
        raise located(NotImplementedError, "ParameterDict is a container of parameters; it has no forward")


class Parameter(_EagerParameter):
    """``paddle.nn.Parameter(data=None, requires_grad=True)``: a trainable eager tensor made from
    ``data`` (a Tensor, array or list; None gives an empty float32 one).  Assigning it to a
    Layer attribute registers it.  Dygraph mode only (static parameters come from
    ``create_parameter``)."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            value = np.zeros([0], np.float32)
        elif isinstance(data, Tensor):
            value = data.numpy()
        else:
            value = np.asarray(data)
            if value.dtype == np.float64 and not isinstance(data, np.ndarray):
                value = value.astype(np.float32)
        super().__init__(np.array(value), names.generate("parameter"), trainable=bool(requires_grad))


Module = Layer
ModuleList = LayerList
ModuleDict = LayerDict
