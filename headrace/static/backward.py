"""``paddle.static.append_backward`` / ``gradients`` (also ``paddle.fluid.backward.*``): the
reference's argument checks, then the engine in ``autodiff/backward.py``.

An argument of the wrong type is a ``TypeError`` naming the argument and the API, as in the
reference; the checks hand the engine normalized arguments: Variables, lists of names, a set of
names, a list of callables.  Checks of what the arguments name (a parameter that is not a
variable of the program, a target gradient of the wrong shape) are the engine's; checkpoints are
checked by the recompute pass (``passes/recompute.py``), before anything is appended.
"""
from __future__ import annotations

from ..autodiff import backward as _engine
from ..core.variable import Variable


def _check_variable(value, arg: str, api: str) -> None:
    if not isinstance(value, Variable):
        raise TypeError(f"The type of '{arg}' in {api} must be Variable, but received "
                        f"{type(value).__name__}: {value!r}")


def _variable_list(value, arg: str, api: str) -> list:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if not isinstance(item, Variable):
            raise TypeError(f"The type of '{arg}' in {api} must be a Variable or a list of Variables, "
                            f"but received {type(item).__name__}: {item!r}")
    return items


def _name_collection(value, arg: str, api: str, containers=(list, tuple, set, frozenset)):
    """Names from a list/tuple/set of Variables or str; ``None`` stays ``None``."""
    if value is None:
        return None
    if not isinstance(value, containers):
        kinds = " or ".join(c.__name__ for c in containers)
        raise TypeError(f"The type of '{arg}' in {api} should be {kinds}, but received "
                        f"{type(value).__name__}: {value!r}")
    out = []
    for item in value:
        if isinstance(item, Variable):
            out.append(item.name)
        elif isinstance(item, str):
            out.append(item)
        else:
            raise TypeError(f"The type of {arg}'s member in {api} must be Variable or str, but "
                            f"received {type(item).__name__}: {item!r}")
    return out


def _check_callbacks(callbacks) -> list:
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError("The type of 'callbacks' in append_backward must be list or tuple, but "
                        f"received {type(callbacks).__name__}")
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(f"every element of 'callbacks' in append_backward must be callable, "
                            f"got {type(cb).__name__}: {cb!r}")
    return list(callbacks)


def _target_gradient_list(value) -> list | None:
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for g in items:
        if g is not None and not isinstance(g, Variable):
            raise TypeError("The type of 'target_gradients' in gradients must be a Variable or a "
                            f"list of Variables (or None), but received {type(g).__name__}: {g!r}")
    return items


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Append the backward of ``loss`` to its program; return ``[(parameter, gradient)]``.

    ``parameter_list`` (names or Variables) only filters the returned pairs (default: every
    trainable parameter); ``no_grad_set`` (names or Variables) adds to the stop_gradient
    variables; ``callbacks`` are called as ``cb(block=..., context=...)`` after each gradient op.
    ``checkpoints`` (Variables or names) turn on activation recompute (``passes/recompute.py``);
    the return value stays a list either way (the reference returns a tuple with checkpoints).
    """
    api = "append_backward"
    _check_variable(loss, "loss", api)
    wanted = _name_collection(parameter_list, "parameter_list", api)
    no_grad = set(_name_collection(no_grad_set, "no_grad_set", api) or ())
    callbacks = _check_callbacks(callbacks)
    return _engine.append_backward(loss, wanted, no_grad, callbacks, checkpoints)


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``sum(targets)`` (each seeded by ones or by ``target_gradients``) with
    respect to ``inputs``; one Variable per input, ``None`` where the targets do not depend on it.
    """
    api = "gradients"
    targets = _variable_list(targets, "targets", api)
    inputs = _variable_list(inputs, "inputs", api)
    target_gradients = _target_gradient_list(target_gradients)
    no_grad = set(_name_collection(no_grad_set, "no_grad_set", api) or ())
    return _engine.gradients(targets, inputs, target_gradients, no_grad)


calc_gradient = gradients
