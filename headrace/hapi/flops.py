"""``paddle.flops``: floating-point operations of a network, counted per layer type with the
reference's rules (``python/paddle/hapi/dynamic_flops.py``, ``static_flops.py``).

For an ``nn.Layer`` one forward pass runs in eval mode on a ``randn`` input of ``input_size``;
each *leaf* layer that ran adds (y = its output, x = its first input):

- Conv1D/2D/3D and their Transpose: ``numel(y) * (C_in / groups * prod(kernel) + has_bias)``;
- Linear: ``in_features * numel(y)``;  BatchNorm2D and BatchNorm (eval): ``2 * numel(x)``;
- AvgPool1D/2D/3D: ``numel(y)``;  AdaptiveAvgPool1D/2D/3D: ``(prod(in // out) + 1) * numel(y)``;
- LeakyReLU: ``numel(x)``;  ReLU, ReLU6, Dropout: 0;
- every other type (max pooling, other activations, BatchNorm1D/3D, ...) counts 0, as the
  reference ("Cannot find suitable count function"), unless ``custom_ops`` maps its class to
  ``fn(layer, inputs, output)`` returning (or adding to ``layer.total_ops``) its count.

For a ``static.Program`` the ops are counted: conv2d/depthwise_conv2d ``numel(out[1:]) *
prod(filter[1:])``, pool2d ``(prod(in // out) + 1) * numel(out[1:])``, mul/matmul ``Y.shape[0] *
numel(out[1:])``, batch_norm ``2 * numel(Y[1:])``, elementwise_* ``numel(X[1:])``.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import nn
from ..core import context
from ..core.program import Program
from ..eager import no_grad
from ..nn.layer import Layer
from ..nn.tensor import randn


def _numel(value):
    return int(np.prod(list(value.shape)))


def count_convNd(m, x, y):  # noqa: N802
    kernel_ops = int(np.prod(list(m.weight.shape)[2:]))
    bias_ops = 1 if m.bias is not None else 0
    return abs(int(_numel(y) * (x[0].shape[1] / m._groups * kernel_ops + bias_ops)))


def count_leaky_relu(m, x, y):
    return _numel(x[0])


def count_bn(m, x, y):
    return abs(2 * _numel(x[0]))


def count_linear(m, x, y):
    return abs(int(m.weight.shape[0]) * _numel(y))


def count_avgpool(m, x, y):
    return _numel(y)


def count_adap_avgpool(m, x, y):
    kernel = np.array(list(x[0].shape)[2:]) // np.array(list(y.shape)[2:])
    return abs(int((int(np.prod(kernel)) + 1) * _numel(y)))


def count_zero_ops(m, x, y):
    return 0


register_hooks = {
    nn.Conv1D: count_convNd, nn.Conv2D: count_convNd, nn.Conv3D: count_convNd,
    nn.Conv1DTranspose: count_convNd, nn.Conv2DTranspose: count_convNd, nn.Conv3DTranspose: count_convNd,
    nn.BatchNorm2D: count_bn, nn.BatchNorm: count_bn,
    nn.ReLU: count_zero_ops, nn.ReLU6: count_zero_ops, nn.Dropout: count_zero_ops,
    nn.LeakyReLU: count_leaky_relu, nn.Linear: count_linear,
    nn.AvgPool1D: count_avgpool, nn.AvgPool2D: count_avgpool, nn.AvgPool3D: count_avgpool,
    nn.AdaptiveAvgPool1D: count_adap_avgpool, nn.AdaptiveAvgPool2D: count_adap_avgpool,
    nn.AdaptiveAvgPool3D: count_adap_avgpool,
}


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Total FLOPs of ``net`` (an ``nn.Layer`` run on a ``randn(input_size)`` input, or a
    ``static.Program``); prints ``Total Flops: ...     Total Params: ...`` (and, with
    ``print_detail``, a per-layer table).  ``custom_ops``: ``{LayerClass: fn(layer, inputs,
    output)}`` overriding or adding a counting rule."""
    if isinstance(net, Layer):
        return dynamic_flops(net, input_size, custom_ops=custom_ops, print_detail=print_detail)
    if isinstance(net, Program):
        return static_flops(net, print_detail=print_detail)
    warnings.warn("Your model must be an instance of paddle.nn.Layer or paddle.static.Program.")
    return -1


class Table:
    """The reference's text table: centred cells between ``|``, ``+---+`` rules."""

    def __init__(self, heads):
        self.heads, self.rows = list(heads), []
        self.widths = [len(h) for h in heads]

    def add_row(self, row):
        self.widths = [max(w, len(str(c))) for w, c in zip(self.widths, row)]
        self.rows.append(row)

    def text(self):
        rule = "".join("+" + "-" * (w + 2) for w in self.widths) + "+"

        def line(row):
            return "".join("|" + str(c).center(w + 2) for c, w in zip(row, self.widths)) + "|"
        return "\n".join([rule, line(self.heads), rule] + [line(r) for r in self.rows] + [rule])


def _rule_for(layer_type, custom_ops, seen):
    if layer_type in custom_ops:
        message, rule = f"Customize Function has been applied to {layer_type}", custom_ops[layer_type]
    elif layer_type in register_hooks:
        message, rule = f"{layer_type}'s flops has been counted", register_hooks[layer_type]
    else:
        message, rule = f"Cannot find suitable count function for {layer_type}. Treat it as zero FLOPs.", None
    if layer_type not in seen:
        print(message)
        seen.add(layer_type)
    return rule


def _run_counted(model, inputs, custom_ops):
    """Hook every leaf layer, run once, return {id(layer): [in shape, out shape, params, flops]}."""
    records, hooked, seen = {}, [], set()

    def make_hook(rule):
        def hook(layer, x, y):
            layer.total_ops = 0
            result = rule(layer, x, y) if rule is not None else 0
            ops = int(result) if result is not None else int(layer.total_ops)
            params = sum(_numel(p) for p in layer.parameters())
            out = y[0] if isinstance(y, (list, tuple)) else y
            records[id(layer)] = [list(x[0].shape), list(out.shape), params, ops]
        return hook

    for layer in model.sublayers(include_self=True):
        if layer.children():
            continue
        hook = make_hook(_rule_for(type(layer), custom_ops, seen))
        layer.register_forward_post_hook(hook)
        hooked.append((layer, hook))
    try:
        with no_grad():
            model(inputs)
    finally:
        for layer, hook in hooked:
            layer._forward_post_hooks.remove(hook)
    return records


def dynamic_flops(model, input_size, custom_ops=None, print_detail=False):
    """FLOPs of an ``nn.Layer`` from one eval-mode forward pass (see the module docstring)."""
    training = model.training
    model.eval()
    try:
        with context.static_mode_guard(False):
            records = _run_counted(model, randn(list(input_size)), custom_ops or {})
    finally:
        if training:
            model.train()
    table = Table(["Layer Name", "Input Shape", "Output Shape", "Params", "Flops"])
    total_ops = total_params = 0
    for layer in model.sublayers(include_self=True):
        if id(layer) in records and not layer.children():
            in_shape, out_shape, params, ops = records[id(layer)]
            table.add_row([layer.full_name(), in_shape, out_shape, params, ops])
            total_ops, total_params = total_ops + ops, total_params + params
    if print_detail:
        print(table.text())
    print(f"Total Flops: {total_ops}     Total Params: {total_params}")
    return int(total_ops)


def _tail(shape):
    return abs(int(np.prod(list(shape)[1:])))


def _op_flops(op, var):
    kind = op.type
    if kind in ("conv2d", "depthwise_conv2d"):
        return _tail(var(op.output("Output")[0]).shape) * int(np.prod(var(op.input("Filter")[0]).shape[1:])), \
            op.input("Filter")[0]
    if kind == "pool2d":
        x, out = var(op.input("X")[0]).shape, var(op.output("Out")[0]).shape
        kernel = np.array(x[2:]) // np.array(out[2:])
        return abs(int((int(np.prod(kernel)) + 1) * _tail(out))), ""
    if kind in ("mul", "matmul"):
        y = var(op.input("Y")[0])
        return abs(int(y.shape[0]) * _tail(var(op.output("Out")[0]).shape)), y.name
    if kind == "batch_norm":
        return 2 * _tail(var(op.output("Y")[0]).shape), ""
    if kind.startswith("element"):
        return _tail(var(op.input("X")[0]).shape), ""
    return 0, ""


def static_flops(program, print_detail=False):
    """FLOPs of a static Program, op by op (see the module docstring); returns the total."""
    def var(name):
        for block in program.blocks:
            if block.has_var(name):
                return block.var(name)
        raise KeyError(name)

    table, total = Table(["OP Type", "Param name", "Flops"]), 0
    for block in program.blocks:
        for op in block.ops:
            count, param = _op_flops(op, var)
            if count:
                table.add_row([op.type, param, count])
                total += count
    if print_detail:
        print(table.text())
    return int(total)
