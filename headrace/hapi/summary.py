"""``paddle.summary``: the reference's per-layer table (layer (type), input shape, output shape,
param #), the parameter totals and the size estimates, from one forward pass with hooks.

As the reference: every sublayer except ``Sequential``/``LayerList`` containers (and the network
itself, unless it has no sublayers) gets a row named ``<Class>-<n>`` where n is 1 + the number at
the end of the layer's unique name; a row counts the layer's *own* parameters (so nothing is
counted twice); trainable = ``trainable and not stop_gradient``.  Sizes assume 4-byte values:
input size, forward/backward size = 2 x the sum of every row's output elements, params size.
"""
from __future__ import annotations

import numbers
import warnings
from collections import OrderedDict

import numpy as np

from ..core import context
from ..eager import no_grad
from ..nn.containers import LayerList
from ..nn.layer import Layer
from ..nn.layers import Sequential
from ..nn.tensor import cast, rand
from ..static.input_spec import InputSpec


def summary(net, input_size=None, dtypes=None, input=None):  # noqa: A002
    """Print a summary table of ``net`` and return ``{'total_params', 'trainable_params'}``.

    ``input_size``: a shape tuple, an InputSpec, or a list of them for several inputs (only the
    batch dimension may be None or -1; it becomes 1).  ``dtypes``: the inputs' dtypes (default
    float32).  ``input``: real input(s) (Tensor, list or dict) instead of ``input_size``; it is
    passed to ``net`` as one argument, as the reference does."""
    if not isinstance(net, Layer):
        raise TypeError(f"summary: net must be a paddle.nn.Layer, got {type(net).__name__}")
    if input_size is None and input is None:
        raise ValueError("input_size and input cannot be None at the same time")
    if input_size is None:
        input_size = _size_of(input)
    shapes = _check_input(_normalize(input_size))
    if not context.in_dynamic_mode():
        warnings.warn("Your model was created in static graph mode, this may not get correct summary information!")
        in_train_mode = False
    else:
        in_train_mode = net.training
    if in_train_mode:
        net.eval()
    try:
        text, info = summary_string(net, shapes, dtypes, input)
    finally:
        if in_train_mode:
            net.train()
    print(text)
    return info


def _size_of(value):
    if isinstance(value, dict):
        return [tuple(v.shape) for v in value.values()]
    if isinstance(value, (list, tuple)):
        return [tuple(v.shape) for v in value]
    if hasattr(value, "shape"):
        return tuple(value.shape)
    raise ValueError("Input is not tensor, list, tuple and dict, unable to determine input_size, "
                     "please input input_size.")


def _normalize(input_size):
    if isinstance(input_size, InputSpec):
        return tuple(input_size.shape)
    if isinstance(input_size, numbers.Integral):
        return (int(input_size),)
    if isinstance(input_size, list):
        items = []
        for item in input_size:
            item = (item,) if isinstance(item, numbers.Integral) else item
            if not isinstance(item, (tuple, InputSpec)):
                raise TypeError(f"summary: when input_size is a list, each item must be a tuple or InputSpec, "
                                f"got {type(item).__name__}")
            items.append(tuple(item.shape) if isinstance(item, InputSpec) else item)
        return items
    return input_size


def _is_shape(shape):
    return not any(isinstance(item, (list, tuple)) for item in shape)


def _check_input(input_size):
    if isinstance(input_size, (list, tuple)) and _is_shape(input_size):
        unknown, shape = 0, []
        for item in input_size:
            if item is None or item == -1:
                unknown += 1
                if unknown > 1:
                    raise ValueError("Option input_size only the dim of batch_size can be None or -1.")
                item = 1
            elif item <= 0:
                raise ValueError(f"Expected element in input size greater than zero, but got {item}")
            shape.append(item)
        return tuple(shape)
    return [_check_input(i) for i in input_size]


def _all_numbers(items):
    return all(isinstance(i, numbers.Number) for i in items)


def _build_dtypes(input_size, dtype):
    if isinstance(input_size, (list, tuple)) and _all_numbers(input_size):
        return [dtype or "float32"]
    return [_build_dtypes(i, dtype) for i in input_size]


def _build_input(input_size, dtypes):
    if isinstance(input_size, (list, tuple)) and _all_numbers(input_size):
        dtype = dtypes[0] if isinstance(dtypes, (list, tuple)) else dtypes
        return cast(rand(list(input_size)), dtype)
    return [_build_input(i, d) for i, d in zip(input_size, dtypes)]


def _shape_of(value):
    if isinstance(value, (list, tuple)):
        return [_shape_of(v) for v in value]
    return list(value.shape) if hasattr(value, "shape") else []


def _row(layer, inputs, output):
    params = trainable = 0
    any_trainable = None
    for param in layer._parameters.values():
        if param is None:
            continue
        size = int(np.prod(param.shape))
        params += size
        if param.trainable and not param.stop_gradient:
            trainable += size
            any_trainable = True
        elif any_trainable is None:
            any_trainable = False
    return {"input_shape": _shape_of(list(inputs)), "output_shape": _shape_of(output), "nb_params": params,
            "trainable_params": trainable, "trainable": any_trainable}


def _collect(model, input_size, dtypes, input):
    rows = OrderedDict()

    def hook(layer, inputs, output):
        try:
            index = int(layer.full_name().split("_")[-1])
        except ValueError:
            index = len(rows)
        rows[f"{type(layer).__name__}-{index + 1}"] = _row(layer, inputs, output)

    depth = len(model.sublayers())
    hooked = [layer for layer in model.sublayers(include_self=True)
              if not isinstance(layer, (Sequential, LayerList)) and (layer is not model or depth < 1)]
    for layer in hooked:
        layer.register_forward_post_hook(hook)
    try:
        with no_grad():
            if input is not None:
                model(input)
            else:
                model(*_build_input([input_size] if isinstance(input_size, tuple) else input_size, dtypes))
    finally:
        for layer in hooked:
            layer._forward_post_hooks.remove(hook)
    return rows


def _widths(rows):
    widths = {"layer": 15, "input": 20, "output": 20, "params": 15}
    for key, row in rows.items():
        widths["layer"] = max(widths["layer"], len(key))
        widths["input"] = max(widths["input"], len(str(row["input_shape"])))
        widths["output"] = max(widths["output"], len(str(row["output_shape"])))
        widths["params"] = max(widths["params"], len(str(row["nb_params"])))
    return widths, max(75, sum(widths.values()) + 5)


def _numel(shape):
    if shape and all(isinstance(s, (list, tuple)) for s in shape):
        return sum(_numel(s) for s in shape)
    return int(np.prod(shape))      # [] (a 0-D or non-Tensor output) counts 1, as the reference


def _input_mb(input_size):
    if isinstance(input_size, (list, tuple)) and _all_numbers(input_size):
        return abs(np.prod(input_size) * 4.0 / 1024 ** 2)
    return sum(_input_mb(i) for i in input_size)


def summary_string(model, input_size=None, dtypes=None, input=None):  # noqa: A002
    """The summary text and ``{'total_params', 'trainable_params'}`` (``summary`` prints the text)."""
    if not isinstance(dtypes, (list, tuple)):
        dtypes = _build_dtypes(input_size, dtypes)
    rows = _collect(model, input_size, dtypes, input)
    widths, table = _widths(rows)

    def line(*cells):
        return " ".join(f"{c:^{w}}" for c, w in zip(cells, widths.values())) + "\n"

    text = "-" * table + "\n" + line("Layer (type)", "Input Shape", "Output Shape", "Param #") + "=" * table + "\n"
    total = trainable = outputs = 0
    for key, row in rows.items():
        text += line(key, str(row["input_shape"]), str(row["output_shape"]), f"{row['nb_params']:,}")
        total += row["nb_params"]
        outputs += _numel(row["output_shape"])
        trainable += row["trainable_params"] if row["trainable"] else 0
    input_mb = _input_mb([input_size] if isinstance(input_size, tuple) else input_size)
    output_mb = abs(2.0 * outputs * 4.0 / 1024 ** 2)      # x2 for gradients
    params_mb = abs(total * 4.0 / 1024 ** 2)
    text += "=" * table + "\n"
    text += f"Total params: {total:,}\nTrainable params: {trainable:,}\nNon-trainable params: {total - trainable:,}\n"
    text += "-" * table + "\n"
    text += (f"Input size (MB): {input_mb:0.2f}\nForward/backward pass size (MB): {output_mb:0.2f}\n"
             f"Params size (MB): {params_mb:0.2f}\nEstimated Total Size (MB): {input_mb + output_mb + params_mb:0.2f}\n")
    text += "-" * table + "\n"
    return text, {"total_params": int(total), "trainable_params": int(trainable)}
