"""``nn.Layer``: a module of parameters and sublayers whose ``forward`` runs in either mode.

A layer's parameters come from ``create_parameter``: in static mode a Parameter of the main
program with its initializer op in the startup program (as ``static_layers`` does); in dygraph
mode an eager Parameter filled at once by running the same initializer op.  Names follow the
reference: a layer of class ``Linear`` is ``linear_<n>`` and its parameters ``linear_<n>.w_0``,
``linear_<n>.b_0``.  Attributes holding Parameters or Layers are registered (in assignment
order, which is the order ``parameters()`` returns); lists of layers are not (as the reference).
"""
from __future__ import annotations

import collections
import re

import numpy as np

from ..core import context, names
from ..core.dtypes import convert_dtype
from ..core.variable import Parameter as StaticParameter
from ..eager.tape import no_grad
from ..eager.tensor import Parameter as EagerParameter
from ..eager.tensor import Tensor
from ..runtime.scope import global_scope
from ..ops.apply import apply_op
from . import static_layers

_PARAMETER_TYPES = (EagerParameter, StaticParameter)


def _camel_to_snake(name: str) -> str:
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()      # Conv2D -> conv2d, as the reference


class _EagerInitBlock:
    """What an Initializer sees as its block in dygraph mode: ``append_op`` runs the op now."""

    @staticmethod
    def append_op(type, inputs=None, outputs=None, attrs=None):  # noqa: A002  (Block's signature)
        with no_grad():
            return apply_op(type, inputs, attrs, outputs)


def create_parameter(shape, dtype, attr=None, is_bias=False, default_initializer=None, name_prefix=None):
    """A parameter for the current mode (see the module docstring)."""
    if context.in_static_mode():
        return static_layers.create_parameter(shape, dtype, attr, is_bias, default_initializer, name_prefix)
    attr, shape, dtype, name, initializer = static_layers.parameter_spec(
        shape, dtype, attr, is_bias, default_initializer, name_prefix)
    if isinstance(attr, static_layers.WeightNormParamAttr):
        raise RuntimeError("WeightNormParamAttr is for static programs (dygraph layers do not support it; "
                           "build the program in static mode)")
    param = EagerParameter(np.empty(shape, dtype.numpy), name, trainable=attr.trainable,
                           optimize_attr={"learning_rate": attr.learning_rate}, regularizer=attr.regularizer,
                           do_model_average=attr.do_model_average, need_clip=attr.need_clip)
    initializer(param, _EagerInitBlock())
    return param


_STORES = ("_parameters", "_sub_layers", "_buffers")


class _Registered:
    """Stands on a Layer subclass (``home``) for an attribute name its instances register a
    parameter or sublayer under (``self.weight = ...``), so reading ``layer.weight`` is a
    class-attribute hit that returns the store's value: a missed instance look-up followed by
    ``__getattr__`` costs ~0.5 us in CPython 3.11, paid twice per ``Linear`` call.  A non-data
    descriptor: a plain value assigned over the name (kept in the instance ``__dict__``) wins; an
    instance without the name falls through to ``__getattr__`` and its AttributeError.

    It must never hide a real attribute: ``home``'s MRO had none when it was installed, but an
    instance or class of a subclass may have one after ``home`` in its MRO (a mixin listed after
    the Layer base).  For those (never for ``home``'s own instances, the fast path) the real
    attribute is looked up first, as Python would have found it without the stand-in."""

    __slots__ = ("name", "home")

    def __init__(self, name, home):
        self.name, self.home = name, home

    def __get__(self, layer, owner=None):
        if layer is None:
            real = _real_attribute(owner, self.name)
            if real is _ABSENT:
                raise AttributeError(f"type object {owner.__name__!r} has no attribute {self.name!r}")
            return _bind(real, None, owner)
        if type(layer) is not self.home:
            real = _real_attribute(type(layer), self.name)
            if real is not _ABSENT:
                return _bind(real, layer, type(layer))
        instance = layer.__dict__
        for store in _STORES:
            items = instance.get(store)
            if items is not None and self.name in items:
                return items[self.name]
        raise AttributeError(self.name)


_ABSENT = object()


def _real_attribute(cls, name):
    """What ``cls``'s MRO defines for ``name``, stand-ins skipped (``_ABSENT`` if nothing)."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name, _ABSENT)
        if value is not _ABSENT and type(value) is not _Registered:
            return value
    return _ABSENT


def _bind(value, layer, owner):
    get = getattr(type(value), "__get__", None)
    return get(value, layer, owner) if get is not None else value


def _stand_for(cls, name) -> None:
    """Install a ``_Registered`` for ``name`` on ``cls`` unless the class (or a base) has a real
    attribute of that name or ``cls`` already has its stand-in (a base's stand-in is not enough:
    on ``cls`` it would take the slow path)."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name, _ABSENT)
        if value is not _ABSENT and (type(value) is not _Registered or klass is cls):
            return
    setattr(cls, name, _Registered(name, cls))


class Layer:
    """Base class of layers; subclasses define ``forward``."""

    def __init__(self, name_scope=None, dtype="float32"):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        self.training = True
        self._dtype = convert_dtype(dtype)
        self._full_name = names.generate(name_scope or _camel_to_snake(type(self).__name__))
        self._forward_pre_hooks = []
        self._forward_post_hooks = []

    def full_name(self) -> str:
        return self._full_name

    # --- registration -----------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        for store in (self._parameters, self._sub_layers, self._buffers):
            store.pop(name, None)
        if isinstance(value, _PARAMETER_TYPES):
            self._parameters[name] = value
        elif isinstance(value, Layer):
            self._sub_layers[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)
        _stand_for(type(self), name)

    def __getattr__(self, name):
        for store in _STORES:
            items = self.__dict__.get(store)
            if items is not None and name in items:
                return items[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for store in (self._parameters, self._sub_layers, self._buffers):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def add_sublayer(self, name, sublayer):
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer({name!r}): expected a Layer, got {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def add_parameter(self, name, parameter):
        if parameter is not None and not isinstance(parameter, _PARAMETER_TYPES):
            raise TypeError(f"add_parameter({name!r}): expected a Parameter, got {type(parameter).__name__}")
        self._parameters[str(name)] = parameter
        return parameter

    def register_buffer(self, name, tensor, persistable=True):
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer({name!r}): expected a Tensor, got {type(tensor).__name__}")
        if tensor is not None:
            tensor.persistable = bool(persistable)
        self._buffers[str(name)] = tensor

    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        return create_parameter(shape, dtype if dtype is not None else self._dtype, attr, is_bias,
                                default_initializer, name_prefix=self._full_name)

    # --- traversal ----------------------------------------------------------------------------
    def named_sublayers(self, prefix="", include_self=False, layers_set=None):
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None:
                continue
            path = f"{prefix}.{key}" if prefix else key
            yield from layer.named_sublayers(path, include_self=True, layers_set=layers_set)

    def sublayers(self, include_self=False) -> list:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        for key, layer in self._sub_layers.items():
            if layer is not None:
                yield key, layer

    def children(self):
        return [layer for _, layer in self.named_children()]

    def named_parameters(self, prefix="", include_sublayers=True):
        seen = set()
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for path, layer in layers:
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{path}.{key}" if path else key), param

    def parameters(self, include_sublayers=True) -> list:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix="", include_sublayers=True):
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for path, layer in layers:
            for key, buf in layer._buffers.items():
                if buf is not None:
                    yield (f"{path}.{key}" if path else key), buf

    def buffers(self, include_sublayers=True) -> list:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    # --- modes and calls --------------------------------------------------------------------
    def train(self):
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def register_forward_pre_hook(self, hook):
        self._forward_pre_hooks.append(hook)
        return hook

    def register_forward_post_hook(self, hook):
        self._forward_post_hooks.append(hook)
        return hook

    def __call__(self, *inputs, **kwargs):
        for hook in self._forward_pre_hooks:
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        for hook in self._forward_post_hooks:
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    def clear_gradients(self, set_to_zero=True) -> None:
        for param in self.parameters():
            if isinstance(param, Tensor) and param.trainable:
                param.clear_gradient(set_to_zero)

    # --- state ------------------------------------------------------------------------------
    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix="", use_hook=True):
        """Structured name (``fc.weight``) -> parameter or persistable buffer."""
        out = collections.OrderedDict() if destination is None else destination
        for name, param in self.named_parameters(structured_name_prefix.rstrip("."), include_sublayers):
            out[name] = param
        for name, buf in self.named_buffers(structured_name_prefix.rstrip("."), include_sublayers):
            if buf.persistable:
                out[name] = buf
        return out

    def set_state_dict(self, state_dict, use_structured_name=True):
        """Load values by structured name (or by parameter name); returns (missing, unexpected)."""
        own = self.state_dict()
        if not use_structured_name:
            own = collections.OrderedDict((t.name, t) for t in own.values())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        pairs = []
        for key, target in own.items():
            if key in state_dict:
                pairs.append((key, target, _state_value(key, target, state_dict[key])))
        for key, target, value in pairs:    # every value checked before any is set
            if isinstance(target, Tensor):
                target.set_value(value)
            else:                           # a static Parameter: its value lives in the global scope
                global_scope()._set_array(target.name, np.array(value, copy=True))
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for key, layer in self._sub_layers.items():
            body = repr(layer).replace("\n", "\n  ")
            lines.append(f"  ({key}): {body}")
        return "\n".join(lines) + ")" if len(lines) > 1 else lines[0] + ")"


def _state_value(key, target, value) -> np.ndarray:
    """``value`` as an array, checked against ``target``'s shape and dtype."""
    from ..core.errors import DTypeError, ShapeError

    value = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    shape = target.shape
    if list(value.shape) != list(shape):
        raise ShapeError(f"set_state_dict: {key!r} ({target.name}) has shape {list(shape)}, the value has shape "
                         f"{list(value.shape)}")
    if convert_dtype(value.dtype) != convert_dtype(target.dtype):
        raise DTypeError(f"set_state_dict: {key!r} ({target.name}) has dtype {target.dtype}, the value has dtype "
                         f"{value.dtype}")
    return value
