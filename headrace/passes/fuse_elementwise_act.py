"""``fuse_elewise_add_act_ops``: ``elementwise_add`` + activation -> ``fused_elemwise_add_activation``.

Contract
--------
Input: a Program (forward, optionally with its backward).  Output: an equivalent program (the
fused kernels do the same arithmetic: bit-identical results) with fewer ops and intermediates.
Names in ``ctx.keep`` (fetch targets) and persistables are never fused away.

Algorithm (activations: relu, tanh; patterns as the reference's ``fuse_elewise_add_act_pass``)
1. ``s = add(a, b); r = act(s)`` where only ``act`` reads ``s``: one fused op
   ``r = fused(a, b, functor_list=[act, add])`` at the add's place.  Backward: ``act_grad``
   (``r``, ``r@G`` -> ``s@G``) and the ``add_grad`` that alone reads ``s@G`` become one
   ``fused_elemwise_add_activation_grad`` at the act_grad's place.
2. ``t = act(b); o = add(a, t)`` (``t`` in either operand when shapes are equal; addition is
   commutative bit for bit): ``o, t = fused(a, b, functor_list=[add, act])`` at the add's
   place (``t`` is kept as ``IntermediateOut``; any other reader of ``t`` must come after the
   add).  Backward: ``add_grad`` (``o@G`` -> ``a@G``, ``t@G``) and the ``act_grad`` that alone
   reads ``t@G`` become one fused gradient op at the add_grad's place.
3. A backward pair that does not match exactly stays as it is; the forward fusion is still
   valid because no backward op reads the fused-away name's data.
"""
from __future__ import annotations

from ..core.names import grad_name
from ..ops.fused import ACTIVATIONS
from ..ops.registry import lookup
from .fusion import Uses, grad_op_of, remove, replace

ADD = "elementwise_add"
FUSED = "fused_elemwise_add_activation"


def _one(op, slot):
    names = op.inputs.get(slot) or op.outputs.get(slot) or []
    return names[0] if len(names) == 1 else None


def apply(program, ctx):
    block = program.global_block()
    persist = {v.name for v in program.list_vars() if v.persistable}
    fused = 0
    changed = True
    while changed:
        changed = False
        uses = Uses(block)
        for op in list(block.ops):
            if op.type in ACTIVATIONS and _act_outer(block, uses, op, ctx.keep | persist):
                fused += 1
                changed = True
                break
            if op.type == ADD and _add_outer(block, uses, op, ctx.keep | persist):
                fused += 1
                changed = True
                break
    ctx.log.append(("fuse_elewise_add_act_pass", f"fused {fused} add+activation pairs"))
    return program


def _act_outer(block, uses, act, keep) -> bool:
    s, r = _one(act, "X"), act.outputs["Out"][0]
    writers = uses.writers.get(s, [])
    if s in keep or len(writers) != 1 or writers[0].type != ADD or not uses.only_readers(s, [act]):
        return False
    add = writers[0]
    a, b = add.inputs["X"][0], add.inputs["Y"][0]
    act_grad = grad_op_of(uses, act.type, "Out", r)
    s_grad = act_grad.outputs.get(grad_name("X"), [None])[0] if act_grad is not None else None
    add_grad = None
    if s_grad is not None and s_grad not in keep:
        readers = uses.readers.get(s_grad, [])
        if (len(readers) == 1 and lookup(readers[0].type).forward_type == ADD and uses.single_writer(s_grad, act_grad)
                and readers[0].inputs.get("X") == [a] and readers[0].inputs.get("Y") == [b]):
            add_grad = readers[0]
    attrs = {"functor_list": [act.type, ADD], "axis": add.attrs["axis"]}
    replace(block, add, FUSED, {"X": [a], "Y": [b]}, {"Out": [r]}, dict(attrs))
    remove(block, act)
    if add_grad is not None:
        outs = {slot: add_grad.outputs[slot] for slot in (grad_name("X"), grad_name("Y"))
                if add_grad.outputs.get(slot)}
        replace(block, act_grad, FUSED + "_grad",
                {"X": [a], "Y": [b], "Out": [r], grad_name("Out"): act_grad.inputs[grad_name("Out")]},
                outs, dict(attrs))
        remove(block, add_grad)
    return True


def _add_outer(block, uses, add, keep) -> bool:
    x_name, y_name = add.inputs["X"][0], add.inputs["Y"][0]
    a, t, t_slot = x_name, y_name, "Y"
    act = _act_writer(uses, t)
    if act is None:
        act = _act_writer(uses, x_name)
        var_x, var_y = block._find_var_recursive(x_name), block._find_var_recursive(y_name)
        if act is None or add.attrs["axis"] != -1 or var_x.shape != var_y.shape:
            return False
        a, t, t_slot = y_name, x_name, "X"
    if a == t:   # t + t: the fused op would read t as X while writing it as IntermediateOut
        return False
    a_slot = "X" if t_slot == "Y" else "Y"
    o = add.outputs["Out"][0]
    order = {id(op): i for i, op in enumerate(block.ops)}
    if t in keep or any(order[id(op)] < order[id(add)] for op in uses.readers.get(t, []) if op is not add):
        return False
    b = act.inputs["X"][0]
    attrs = {"functor_list": [ADD, act.type], "axis": add.attrs["axis"]}
    add_grads = [op for op in uses.readers.get(t, []) if lookup(op.type).forward_type == ADD
                 and op.inputs.get("X") == [x_name] and op.inputs.get("Y") == [y_name]]
    add_grad = add_grads[0] if len(add_grads) == 1 else None
    act_grad = None
    t_grad = add_grad.outputs.get(grad_name(t_slot), [None])[0] if add_grad is not None else None
    if t_grad is not None and t_grad not in keep:
        readers = uses.readers.get(t_grad, [])
        if (len(readers) == 1 and lookup(readers[0].type).forward_type == act.type
                and readers[0].inputs.get("Out") == [t] and uses.single_writer(t_grad, add_grad)):
            act_grad = readers[0]
    replace(block, add, FUSED, {"X": [a], "Y": [b]}, {"Out": [o], "IntermediateOut": [t]}, dict(attrs))
    remove(block, act)
    if act_grad is not None:
        outs = {grad_name("Y"): act_grad.outputs[grad_name("X")]}
        if add_grad.outputs.get(grad_name(a_slot)):
            outs[grad_name("X")] = add_grad.outputs[grad_name(a_slot)]
        replace(block, add_grad, FUSED + "_grad",
                {"X": [a], "Y": [b], "IntermediateOut": [t], grad_name("Out"): add_grad.inputs[grad_name("Out")]},
                outs, dict(attrs))
        remove(block, act_grad)
    return True


def _act_writer(uses, name):
    writers = uses.writers.get(name, [])
    if len(writers) == 1 and writers[0].type in ACTIVATIONS:
        return writers[0]
    return None
