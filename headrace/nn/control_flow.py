"""``static.nn.cond`` / ``case`` / ``switch_case`` / ``while_loop``.

In dygraph mode they run the chosen Python branch (or loop) at once, as the reference does there.
Static programs would need sub-blocks run conditionally by the executor, which headrace's IR and
executor do not have yet: in static mode these raise NotImplementedError saying so.
"""
from __future__ import annotations

import numbers

from ..core import context


def _static_unsupported(api):
    if context.in_static_mode():
        raise NotImplementedError(
            f"static.nn.{api}: control flow inside a static program (conditional / loop sub-blocks) is not "
            "supported by headrace yet; decide the branch in Python while building, or run in dygraph mode "
            "(paddle.disable_static()), where it runs the Python branch directly")


def _scalar(value, api, what, kind):
    from ..eager.tensor import Tensor

    if isinstance(value, Tensor):
        if value.size != 1:
            raise ValueError(f"static.nn.{api}: {what} must hold one element, got shape {value.shape}")
        value = value.item()
    if kind is bool:
        if not isinstance(value, (bool, numbers.Integral)) and not hasattr(value, "__bool__"):
            raise TypeError(f"static.nn.{api}: {what} must be a boolean Tensor, got {type(value).__name__}")
        return bool(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"static.nn.{api}: {what} must be an integer Tensor, got {value!r}")
    return int(value)


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """``true_fn()`` if ``pred`` else ``false_fn()`` (None for a missing function)."""
    _static_unsupported("cond")
    for what, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"static.nn.cond: {what} must be callable or None, got {type(fn).__name__}")
    chosen = true_fn if _scalar(pred, "cond", "pred", bool) else false_fn
    return chosen() if chosen is not None else None


def case(pred_fn_pairs, default=None, name=None):
    """The function of the first true predicate; else ``default()`` (or the last pair's function)."""
    _static_unsupported("case")
    if not isinstance(pred_fn_pairs, (list, tuple)) or not pred_fn_pairs:
        raise TypeError("static.nn.case: pred_fn_pairs must be a non-empty list of (pred, fn) pairs")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2 or not callable(pair[1]):
            raise TypeError(f"static.nn.case: every entry must be a (pred, callable) tuple, got {pair!r}")
    for pred, fn in pred_fn_pairs:
        if _scalar(pred, "case", "pred", bool):
            return fn()
    return default() if default is not None else pred_fn_pairs[-1][1]()


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``branch_fns[branch_index]()``; ``branch_fns`` is a dict, a list of (index, fn) or of fns;
    an index with no branch runs ``default`` (or the branch of the largest index)."""
    _static_unsupported("switch_case")
    if isinstance(branch_fns, dict):
        table = dict(branch_fns)
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(callable(f) for f in branch_fns):
        table = dict(enumerate(branch_fns))
    elif isinstance(branch_fns, (list, tuple)) and branch_fns:
        table = dict(branch_fns)
    else:
        raise TypeError("static.nn.switch_case: branch_fns must be a non-empty dict or list")
    for key, fn in table.items():
        if isinstance(key, bool) or not isinstance(key, numbers.Integral) or not callable(fn):
            raise TypeError(f"static.nn.switch_case: branch {key!r} must map an int to a callable")
    index = _scalar(branch_index, "switch_case", "branch_index", int)
    fn = table.get(index, default if default is not None else table[max(table)])
    return fn()


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """``while cond(*vars): vars = body(*vars)``; returns the final ``vars`` (a list)."""
    _static_unsupported("while_loop")
    if not callable(cond) or not callable(body):
        raise TypeError("static.nn.while_loop: cond and body must be callable")
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise TypeError("static.nn.while_loop: loop_vars must be a non-empty list or tuple")
    values = list(loop_vars)
    while _scalar(cond(*values), "while_loop", "cond(...)", bool):
        result = body(*values)
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(result) != len(values):
            raise ValueError(f"static.nn.while_loop: body returned {len(result)} value(s) for {len(values)} "
                             "loop variable(s)")
        values = result
    return values
