"""fluid 1.x per-parameter gradient clipping: ``set_gradient_clip`` and ``append_gradient_clip_ops``.

``set_gradient_clip(clip, param_list=None, program=None)`` stores a copy of ``clip`` on each
parameter (``gradient_clip_attr``; all parameters of the program by default).  An optimizer
without its own ``grad_clip`` then clips with ``append_gradient_clip_ops``: the pairs are grouped
by the clip their parameter carries and each group is clipped by it — global-norm clips by their
``group_name``, as the reference's 1.x clip context did (one norm over the group; a group with two
``clip_norm`` values is an error) — pairs whose parameter carries none pass unchanged, pairs without a gradient are
dropped.  The optimizer's own ``grad_clip`` wins, as in the reference (which also warns that this
API is deprecated).
"""
from __future__ import annotations

import copy
import warnings

from ..core import context
from ..core.variable import Parameter
from .clip import ClipGradBase, ClipGradByGlobalNorm


def set_gradient_clip(clip, param_list=None, program=None) -> None:
    """Give ``param_list`` (Parameters or their names; default: every parameter of ``program``)
    the gradient clip ``clip``."""
    warnings.warn("set_gradient_clip is deprecated in the reference: give the optimizer a grad_clip "
                  "(e.g. ClipGradByGlobalNorm) instead; an optimizer's own grad_clip wins over it")
    if not isinstance(clip, ClipGradBase):
        raise TypeError("'clip' should be an instance of ClipGradBase's derived class (ClipGradByValue, "
                        f"ClipGradByNorm, ClipGradByGlobalNorm), got {type(clip).__name__}")
    program = program or context.default_main_program()
    block = program.global_block()
    if param_list is None:
        param_list = block.all_parameters()
    if all(isinstance(p, str) for p in param_list):
        param_list = [block.var(name) for name in param_list]
    elif not all(isinstance(p, Parameter) for p in param_list):
        raise TypeError("'param_list' should be a list of Parameter or basestring(parameter's name).")
    for param in param_list:
        param.gradient_clip_attr = copy.deepcopy(clip)


def has_clip_attr(params_grads) -> bool:
    return any(getattr(p, "gradient_clip_attr", None) is not None for p, _ in params_grads)


def append_gradient_clip_ops(param_grads) -> list:
    """Clip each gradient by its parameter's ``gradient_clip_attr`` (see the module docstring);
    returns the ``[(param, grad)]`` pairs in the given order."""
    pairs = [(p, g) for p, g in param_grads if g is not None]
    groups = {}
    for p, g in pairs:
        clip = getattr(p, "gradient_clip_attr", None)
        if clip is not None and not isinstance(clip, ClipGradBase):
            raise TypeError(f"parameter {p.name!r}: gradient_clip_attr must be a ClipGradBase, got "
                            f"{type(clip).__name__}")
        if clip is None:
            continue
        key = ("global", clip.group_name) if isinstance(clip, ClipGradByGlobalNorm) else id(clip)
        first = groups.setdefault(key, (clip, []))[0]
        if isinstance(clip, ClipGradByGlobalNorm) and first.clip_norm != clip.clip_norm:
            raise ValueError(f"all parameters' clip_norm of global-norm group {clip.group_name!r} must be the "
                             f"same, got {first.clip_norm} and {clip.clip_norm} (parameter {p.name!r})")
        groups[key][1].append((p, g))
    clipped = {}
    for clip, group in groups.values():
        for (p, _), (_, new) in zip(group, clip(group)):
            clipped[id(p)] = new
    return [(p, clipped.get(id(p), g)) for p, g in pairs]


__all__ = ["append_gradient_clip_ops", "set_gradient_clip"]
