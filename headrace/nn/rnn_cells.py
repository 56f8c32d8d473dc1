"""Recurrent cells: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` (and ``RNNCellBase``), built from
existing ops (``matmul_v2``, ``elementwise_add``, ``split``, ``sigmoid``, ``tanh``, ...), so both
modes run them and their gradients come from those ops' rules.

Formulas, gate order and parameter shapes are the reference's (``paddle.nn.layer.rnn``), with
``x W_ih^T + b_ih`` and ``h W_hh^T + b_hh`` computed separately:

- SimpleRNNCell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, act tanh or relu;
  weight_ih [hidden, input], weight_hh [hidden, hidden].
- LSTMCell: gates split in the order i, f, g, o (weights [4 hidden, ...]):
  ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' = sigmoid(o) * tanh(c')``;
  ``forward`` returns ``(h', (h', c'))``.
- GRUCell: order r, z, c (weights [3 hidden, ...]): ``r = sigmoid(x_r + h_r)``,
  ``z = sigmoid(x_z + h_z)``, ``c = tanh(x_c + r * h_c)``, ``h' = (h - c) * z + c``.

Every parameter is initialised from U(-1/sqrt(hidden), 1/sqrt(hidden)); a ``*_attr=False`` bias is
absent.  ``states=None`` starts from zeros.  ``proj_size`` (LSTM projections) is not supported
and says so.
"""
from __future__ import annotations

import math
import numbers

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op_single
from . import functional as F
from .initializer import Uniform
from .layer import Layer
from .param_attr import ParamAttr
from .tensor import _key, split


def _matmul_t(x, w, key):
    return apply_op_single("matmul_v2", {"X": x, "Y": w}, {"trans_y": True}, name_key=key)


def _add(x, y, key):
    return apply_op_single("elementwise_add", {"X": x, "Y": y}, name_key=key)


def _mul(x, y, key):
    return apply_op_single("elementwise_mul", {"X": x, "Y": y}, name_key=key)


def _sub(x, y, key):
    return apply_op_single("elementwise_sub", {"X": x, "Y": y}, name_key=key)


def zeros_state(batch_ref, hidden_size, batch_dim_idx=0, init_value=0.0):
    """A [batch, hidden] state filled with ``init_value``, batch taken from ``batch_ref``'s dim
    ``batch_dim_idx`` (works with an unknown batch in static mode)."""
    rank = len(batch_ref.shape)
    axes = [a for a in range(rank) if a != batch_dim_idx]
    key = _key("rnn_state")
    first = apply_op_single("slice", {"Input": batch_ref}, {"axes": axes, "starts": [0] * len(axes),
                                                            "ends": [1] * len(axes), "decrease_axis": axes},
                            name_key=key)                                   # [batch]
    column = apply_op_single("unsqueeze2", {"X": first}, {"axes": [1]}, out_slot="Out", name_key=key)
    ones = apply_op_single("fill_constant", attrs={"shape": [1, int(hidden_size)], "dtype": str(batch_ref.dtype),
                                                   "value": 1.0}, name_key=key)
    zero_col = apply_op_single("fill_any_like", {"X": column}, {"value": float(init_value)}, name_key=key)
    return _mul(zero_col, ones, key)                                         # [batch, hidden]


class RNNCellBase(Layer):
    """Base of the cells: ``get_initial_states`` and the ``state_shape`` a cell declares."""

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0, batch_dim_idx=0):
        """States of ``state_shape`` (or ``shape``) filled with ``init_value``, batch from ``batch_ref``."""
        shape = self.state_shape if shape is None else shape
        if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
            return tuple(zeros_state(batch_ref, s[-1], batch_dim_idx, init_value) for s in shape)
        shape = list(shape) if isinstance(shape, (list, tuple)) else [shape]
        return zeros_state(batch_ref, shape[-1], batch_dim_idx, init_value)

    @property
    def state_shape(self):
        raise located(NotImplementedError, f"{type(self).__name__} does not declare state_shape")


class _GatedCell(RNNCellBase):
    _gates = 1

    def __init__(self, input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr,
                 name=None):
        super().__init__()
        for what, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise located(AttrError, f"{type(self).__name__}: {what} must be a positive int, got {value!r}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        std = 1.0 / math.sqrt(self.hidden_size)
        rows = self._gates * self.hidden_size

        def make(shape, attr, is_bias):
            if is_bias and ParamAttr.to_attr(attr) is False:
                return None
            return self.create_parameter(shape, attr, is_bias=is_bias, default_initializer=Uniform(-std, std))

        self.weight_ih = make([rows, self.input_size], weight_ih_attr, False)
        self.weight_hh = make([rows, self.hidden_size], weight_hh_attr, False)
        self.bias_ih = make([rows], bias_ih_attr, True)
        self.bias_hh = make([rows], bias_hh_attr, True)
        self._name = name

    def _check_input(self, inputs):
        if len(inputs.shape) != 2 or inputs.shape[-1] not in (-1, self.input_size):
            raise located(ShapeError, f"{type(self).__name__}: inputs must be [batch, {self.input_size}], "
                             f"got {fmt_shape(inputs.shape)}")

    def _projections(self, inputs, h, key):
        x_part = _matmul_t(inputs, self.weight_ih, key)
        if self.bias_ih is not None:
            x_part = _add(x_part, self.bias_ih, key)
        h_part = _matmul_t(h, self.weight_hh, key)
        if self.bias_hh is not None:
            h_part = _add(h_part, self.bias_hh, key)
        return x_part, h_part

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(_GatedCell):
    """Elman cell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ("tanh", "relu"):
            raise located(AttrError, f"SimpleRNNCell: activation must be 'tanh' or 'relu', got {activation!r}")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, name)
        self.activation = activation

    def forward(self, inputs, states=None):
        self._check_input(inputs)
        if states is None:
            states = self.get_initial_states(inputs)
        key = _key("simple_rnn_cell", self._name)
        x_part, h_part = self._projections(inputs, states, key)
        h = getattr(F, self.activation)(_add(x_part, h_part, key))
        return h, h

    @property
    def state_shape(self):
        return (self.hidden_size,)


class LSTMCell(_GatedCell):
    """LSTM cell; states ``(h, c)``; returns ``(h', (h', c'))``."""
    _gates = 4

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None):
        if proj_size:
            raise located(NotImplementedError, "LSTMCell: proj_size (projected hidden states) is not supported yet")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, name)

    def forward(self, inputs, states=None):
        self._check_input(inputs)
        if states is None:
            states = self.get_initial_states(inputs)
        h_prev, c_prev = states
        key = _key("lstm_cell", self._name)
        x_part, h_part = self._projections(inputs, h_prev, key)
        i, f, g, o = split(_add(x_part, h_part, key), 4, axis=-1)
        c = _add(_mul(F.sigmoid(f), c_prev, key), _mul(F.sigmoid(i), F.tanh(g), key), key)
        h = _mul(F.sigmoid(o), F.tanh(c), key)
        return h, (h, c)

    @property
    def state_shape(self):
        return ((self.hidden_size,), (self.hidden_size,))


class GRUCell(_GatedCell):
    """GRU cell; returns ``(h', h')``."""
    _gates = 3

    def forward(self, inputs, states=None):
        self._check_input(inputs)
        if states is None:
            states = self.get_initial_states(inputs)
        key = _key("gru_cell", self._name)
        x_part, h_part = self._projections(inputs, states, key)
        x_r, x_z, x_c = split(x_part, 3, axis=-1)
        h_r, h_z, h_c = split(h_part, 3, axis=-1)
        r = F.sigmoid(_add(x_r, h_r, key))
        z = F.sigmoid(_add(x_z, h_z, key))
        c = F.tanh(_add(x_c, _mul(r, h_c, key), key))
        h = _add(_mul(_sub(states, c, key), z, key), c, key)
        return h, h

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None):
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, name)
