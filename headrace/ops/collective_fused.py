"""``c_fused_allreduce_sum``: several gradients all-reduced in one collective (a fused bucket).

``Out[i]`` is the sum of ``X[i]`` over every place of the group, like one ``c_allreduce_sum`` per
input, but the communicator moves the whole bucket at once (``Communicator.all_reduce_sum_many``:
one synchronisation per bucket instead of one per gradient).  Every input of one op has the same
dtype.  The ``fuse_all_reduce_op_pass`` (``passes/fuse_all_reduce.py``) makes these ops.
"""
from __future__ import annotations

from ..core.errors import DTypeError
from .collective import _COMM_ATTRS, current_communicator
from .gradrule import NO_GRADIENT
from .registry import many, register


def _infer(ctx):
    dtypes = ctx.dtypes("X")
    if len(set(dtypes)) > 1:
        ctx.fail("X", "inputs of one dtype (one bucket per dtype)", ", ".join(str(d) for d in dtypes),
                 error=DTypeError)
    ctx.set_many("Out", list(zip(ctx.shapes("X"), dtypes)))


register(
    "c_fused_allreduce_sum",
    inputs=[many("X")], outputs=[many("Out")], attrs=dict(_COMM_ATTRS),
    infer=_infer,
    kernel=lambda ins, attrs, ctx: {"Out": current_communicator().all_reduce_sum_many(list(ins["X"]))},
    grad=NO_GRADIENT, inplace={"Out": "X"}, views={"Out": "X"},
    doc="Out[i] = the sum of X[i] over every place of the group, the whole bucket in one collective",
)
