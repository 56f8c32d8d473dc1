"""fuse_all_optimizer_ops: the update ops of one optimizer run once, over flat buffers.

Contract
--------
Input: a program whose parameter updates are ``sgd`` / ``momentum`` / ``adam`` (or ``adagrad`` /
``decayed_adagrad`` / ``rmsprop`` / ``adadelta``) ops (role
Optimize, in place: ``ParamOut`` is ``Param``, accumulators likewise).  Output: the same training
step where each *group* of updates — same op type, same attributes, same ``LearningRate``
variable, same dtype, at least two — is one update over coalesced buffers:

- per state slot (``Param``, ``Velocity``, ``Moment1``, ``Moment2``) a ``coalesce_tensor`` whose
  ``FusedOutput`` is a new persistable variable ``<slot>@FUSED_<n>`` and whose ``Output`` are the
  state variables themselves: after the first run they are views of the flat buffer, later runs
  copy nothing (``ops/coalesce.py``);
- the gradients coalesced into a temporary flat buffer (one copy per step);
- one update op of the same type on the flat buffers (``fused_adam`` for adam, which advances
  every parameter's beta-power accumulators).

Results are bit-identical to the unfused program: the update kernels are elementwise NumPy
arithmetic in the parameter dtype with the same scalars.  The speed-up is one kernel call instead
of one per parameter (BENCHMARKS.md).  LARS (per-tensor norms) is not elementwise and never fused.

Algorithm
---------
1. Collect the fusible update ops and group them by (type, attributes without role attributes,
   LearningRate name, Param dtype).
2. A group is fused only if moving every member to the position of its last member changes
   nothing: no other op between a member and that position reads or writes what the member
   writes, or writes what it reads.  Otherwise the group is left alone (logged).
3. Remove the members; insert the coalesce ops and the fused update at the last member's
   position, role Optimize, ``op_role_var`` listing every (param, grad) pair.
"""
from __future__ import annotations

from ..core import names, roles
from ..core.roles import OpRole

PASS_NAME = "fuse_all_optimizer_ops_pass"

# op type -> (state slots updated in place besides Param, per-parameter scalar accumulators, fused type)
FUSIBLE = {
    "sgd": ((), (), "sgd"),
    "momentum": (("Velocity",), (), "momentum"),
    "adam": (("Moment1", "Moment2"), ("Beta1Pow", "Beta2Pow"), "fused_adam"),
    # elementwise updates without per-parameter scalar state (ops/optim_more.py)
    "adagrad": (("Moment",), (), "adagrad"),
    "decayed_adagrad": (("Moment",), (), "decayed_adagrad"),
    "rmsprop": (("MeanSquare", "Moment", "MeanGrad"), (), "rmsprop"),
    "adadelta": (("AvgSquaredGrad", "AvgSquaredUpdate"), (), "adadelta"),
}
_SKIP_ATTRS = (roles.ROLE_ATTR, roles.ROLE_VAR_ATTR, roles.NAMESCOPE_ATTR, roles.BUFFER_ATTR, roles.DEVICE_ATTR)


def _key(block, op):
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attrs.items() if k not in _SKIP_ATTRS))
    return op.type, attrs, op.inputs["LearningRate"][0], str(block.var(op.inputs["Param"][0]).dtype)


def _groups(block) -> list:
    groups = {}
    for op in block.ops:
        if op.type in FUSIBLE and roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)) \
                and all(op.outputs[f"{s}Out"] == op.inputs[s] for s in ("Param",) + FUSIBLE[op.type][0]):
            groups.setdefault(_key(block, op), []).append(op)
    return [ops for ops in groups.values() if len(ops) > 1]


def _movable(block, members) -> bool:
    """Step 2: every member can run at the last member's position instead of its own."""
    position = {id(op): i for i, op in enumerate(block.ops)}
    last = max(position[id(op)] for op in members)
    member_ids = {id(op) for op in members}
    for op in members:
        reads, writes = set(op.input_arg_names), set(op.output_arg_names)
        for other in block.ops[position[id(op)] + 1:last]:
            if id(other) in member_ids:
                continue
            if writes & (set(other.input_arg_names) | set(other.output_arg_names)) \
                    or reads & set(other.output_arg_names):
                return False
    return True


def _flat_var(block, slot, members_vars, persistable):
    first = members_vars[0]
    total = 0
    for var in members_vars:
        size = 1
        for d in var.shape:
            size *= int(d)
        total += size
    name = names.generate(f"{slot}@FUSED")
    return block.create_var(name=name, shape=[total], dtype=first.dtype, persistable=persistable,
                            stop_gradient=True)


def _fuse(block, members, ctx) -> None:
    op_type = members[0].type
    state_slots, pow_slots, fused_type = FUSIBLE[op_type]
    index = max(i for i, op in enumerate(block.ops) if any(op is m for m in members))
    template = members[-1]
    attrs = {k: v for k, v in template.attrs.items() if k not in _SKIP_ATTRS}
    role = {roles.ROLE_ATTR: int(OpRole.Optimize)}
    pairs = []
    for op in members:
        pairs += [op.inputs["Param"][0], op.inputs["Grad"][0]]
    new_ops = []   # (type, inputs, outputs, attrs)
    fused_in, fused_out = {"LearningRate": template.inputs["LearningRate"]}, {}
    for slot in ("Param",) + state_slots:
        names_ = [op.inputs[slot][0] for op in members]
        flat = _flat_var(block, slot, [block.var(n) for n in names_], persistable=True)
        new_ops.append(("coalesce_tensor", {"Input": names_}, {"Output": names_, "FusedOutput": [flat.name]}, role))
        fused_in[slot], fused_out[f"{slot}Out"] = [flat.name], [flat.name]
    grads = [op.inputs["Grad"][0] for op in members]
    flat_grad = _flat_var(block, "Grad", [block.var(n) for n in grads], persistable=False)
    new_ops.append(("coalesce_tensor", {"Input": grads}, {"FusedOutput": [flat_grad.name]},
                    {**role, "output_views": False}))
    fused_in["Grad"] = [flat_grad.name]
    for slot in pow_slots:
        pows = [op.inputs[slot][0] for op in members]
        fused_in[slot], fused_out[f"{slot}Out"] = pows, pows
    new_ops.append((fused_type, fused_in, fused_out, {**attrs, **role, roles.ROLE_VAR_ATTR: pairs}))
    callsite = template.callsite
    for op in members:
        block._remove_op(next(i for i, o in enumerate(block.ops) if o is op))
    index -= len(members) - 1
    for offset, (type_, ins, outs, op_attrs) in enumerate(new_ops):
        block._insert_op(index + offset, type_, ins, outs, dict(op_attrs), callsite=callsite)
    ctx.log.append((PASS_NAME, f"fused {len(members)} `{op_type}` updates into one"))


def apply(program, ctx):
    block = program.global_block()
    for members in _groups(block):
        if _movable(block, members):
            _fuse(block, members, ctx)
        else:
            ctx.log.append((PASS_NAME, f"left {len(members)} `{members[0].type}` updates unfused: another op "
                                       "between them reads or writes what they update"))
    return program
