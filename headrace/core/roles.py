"""Operator roles (the reference system's values) and the attribute names that carry them."""
from __future__ import annotations

import enum

ROLE_ATTR = "op_role"
ROLE_VAR_ATTR = "op_role_var"
NAMESCOPE_ATTR = "op_namescope"
DEVICE_ATTR = "op_device"
# The buffer plan (set by the inplace / memory-reuse passes, read by the executor): a list of
# ``[out_slot, out_name, donor_name]``: the kernel computes ``out_name`` into ``donor_name``'s buffer.
BUFFER_ATTR = "buffer_reuse"

# Attributes any op may carry besides its own declared ones.
COMMON_ATTRS = {ROLE_ATTR: 0, ROLE_VAR_ATTR: [], NAMESCOPE_ATTR: "", DEVICE_ATTR: "", BUFFER_ATTR: []}


class OpRole(enum.IntFlag):
    Forward = 0
    Backward = 1
    Optimize = 2
    RPC = 4
    Dist = 8
    LRSched = 16
    Loss = 256


def is_backward(role: int) -> bool:
    return bool(int(role) & OpRole.Backward)


def is_optimize(role: int) -> bool:
    return bool(int(role) & OpRole.Optimize)
