"""``fuse_relu_depthwise_conv``: ``relu`` then ``depthwise_conv2d`` -> ``fused_relu_depthwise_conv2d``.

Contract
--------
Input: a Program.  Output: an equivalent program (same arithmetic: bit-identical) where the relu
output feeding a depthwise convolution is never stored: the fused op applies relu on the fly and
its gradient recomputes it.

Algorithm
---------
1. Find ``r = relu(x)`` read by exactly one ``depthwise_conv2d`` (as ``Input``) in the forward, and
   otherwise only by that conv's gradient op (``Input``) and relu's gradient op (``Out``); ``r``
   not fetched, written once.
2. Backward (when present): the conv gradient's ``Input@GRAD`` must be read only by relu's
   gradient.  Both become one ``fused_relu_depthwise_conv2d_grad`` (``Input=x``) at the conv
   gradient's place; relu's gradient op is removed.  If the backward does not match exactly,
   nothing is fused.
3. The conv becomes the fused op (``Input=x``); the relu op is removed.
"""
from __future__ import annotations

from ..core.names import grad_name
from ..ops.registry import lookup
from .fusion import Uses, remove, replace

DW = "depthwise_conv2d"


def apply(program, ctx):
    block = program.global_block()
    count = 0
    changed = True
    while changed:
        changed = False
        uses = Uses(block)
        for op in list(block.ops):
            if op.type == "relu" and _fuse(block, uses, op, ctx.keep):
                count += 1
                changed = True
                break
    ctx.log.append(("fuse_relu_depthwise_conv_pass", f"fused {count} relu+depthwise_conv2d pairs"))
    return program


def _fuse(block, uses, relu, keep) -> bool:
    x, r = relu.inputs["X"][0], relu.outputs["Out"][0]
    if r in keep or not uses.single_writer(r, relu):
        return False
    readers = uses.readers.get(r, [])
    convs = [op for op in readers if op.type == DW and op.inputs["Input"] == [r]]
    conv_grads = [op for op in readers if lookup(op.type).forward_type == DW and op.inputs["Input"] == [r]]
    relu_grads = [op for op in readers if lookup(op.type).forward_type == "relu" and op.inputs["Out"] == [r]]
    if len(convs) != 1 or len(conv_grads) > 1 or len(relu_grads) > 1:
        return False
    if len(readers) != len(convs) + len(conv_grads) + len(relu_grads):
        return False
    conv = convs[0]
    conv_grad = conv_grads[0] if conv_grads else None
    relu_grad = relu_grads[0] if relu_grads else None
    r_grad = conv_grad.outputs.get(grad_name("Input"), [None])[0] if conv_grad is not None else None
    if relu_grad is not None:
        if r_grad is None or relu_grad.inputs[grad_name("Out")] != [r_grad] or r_grad in keep \
                or uses.readers.get(r_grad, []) != [relu_grad]:
            return False
    elif r_grad is not None:
        return False  # the relu input's gradient is needed but relu's gradient op is missing
    attrs = {k: v for k, v in conv.attrs.items()}
    if conv_grad is not None:
        outs = {}
        if conv_grad.outputs.get(grad_name("Filter")):
            outs[grad_name("Filter")] = conv_grad.outputs[grad_name("Filter")]
        if relu_grad is not None:
            outs[grad_name("Input")] = relu_grad.outputs[grad_name("X")]
        replace(block, conv_grad, "fused_relu_depthwise_conv2d_grad",
                {"Input": [x], "Filter": conv_grad.inputs["Filter"],
                 grad_name("Output"): conv_grad.inputs[grad_name("Output")]}, outs, dict(conv_grad.attrs))
        if relu_grad is not None:
            remove(block, relu_grad)
    replace(block, conv, "fused_relu_depthwise_conv2d", {"Input": [x], "Filter": conv.inputs["Filter"]},
            {"Output": conv.outputs["Output"]}, attrs)
    remove(block, relu)
    return True
