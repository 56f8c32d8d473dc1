"""``paddle.grad``, ``paddle.autograd.backward`` and ``Tensor.register_hook`` over the tape.

- ``grad(outputs, inputs, grad_outputs, ...)`` runs the tape's backward from ``outputs`` and returns
  d(outputs)/d(input) for each input (leaf or intermediate) without touching any ``.grad``.
  ``create_graph=True`` (gradients that are themselves differentiable) is not supported: the
  gradient ops run outside the tape, so it raises NotImplementedError.  An input no gradient
  reaches is an error unless ``allow_unused=True`` (then its result is None).  ``no_grad_vars``:
  no gradient flows through those tensors.  (The facade ``paddle.grad`` sends static mode to
  ``static.gradients``.)
- ``backward(tensors, grad_tensors, retain_graph)``: ``Tensor.backward`` for several roots at once
  (one pass; shared parts of the graph run once).
- ``register_hook(tensor, hook)``: ``hook(grad) -> Tensor or None`` sees the complete gradient of
  ``tensor`` (leaf: before it is accumulated into ``.grad``; intermediate: before it flows on);
  a returned Tensor replaces it.  Returns a handle whose ``remove()`` unregisters it.
"""
from __future__ import annotations

import numpy as np

from . import tape
from .tensor import Tensor


def _as_list(value, what):
    if isinstance(value, Tensor):
        return [value], True
    if isinstance(value, (list, tuple)) and all(isinstance(v, Tensor) for v in value):
        return list(value), False
    raise TypeError(f"{what} must be a Tensor or a list of Tensors, got {type(value).__name__}")


def _seeds(roots, grads, fn):
    """The starting gradient of each root: ones, or the given Tensor (shape checked)."""
    if grads is None:
        grads = [None] * len(roots)
    elif isinstance(grads, Tensor):
        grads = [grads]
    grads = list(grads)
    if len(grads) != len(roots):
        raise ValueError(f"{fn}: {len(grads)} gradient(s) given for {len(roots)} output(s)")
    seeds = []
    for i, (root, grad) in enumerate(zip(roots, grads)):
        if root.stop_gradient:
            raise RuntimeError(f"{fn}: output {i} ({root.name!r}) has stop_gradient=True: no gradient flows "
                               "from it (were all its inputs stop_gradient, or was it computed under no_grad?)")
        if grad is None:
            seeds.append(np.ones(root._value.shape, root._value.dtype))
            continue
        value = np.asarray(grad._value if isinstance(grad, Tensor) else grad, dtype=root._value.dtype)
        if value.shape != root._value.shape:
            raise ValueError(f"{fn}: the gradient of output {i} has shape {list(value.shape)}, the output has "
                             f"shape {root.shape}")
        seeds.append(value)
    return seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None):
    """d(outputs)/d(inputs) as a list of Tensors (see the module docstring)."""
    if create_graph:
        raise NotImplementedError("paddle.grad(create_graph=True): higher-order gradients are not supported "
                                  "by headrace's eager tape (gradient ops run outside it); use create_graph=False")
    if not only_inputs:
        raise ValueError("paddle.grad: only_inputs=False is not supported (as in the reference)")
    roots, _ = _as_list(outputs, "paddle.grad: outputs")
    targets, _ = _as_list(inputs, "paddle.grad: inputs")
    seeds = _seeds(roots, grad_outputs, "paddle.grad")
    found = [None] * len(targets)
    leaf_pos, watch = {}, {}
    for i, t in enumerate(targets):
        if t._node is not None:
            watch[(t._node, t._out_index)] = ("watch", i)
        else:
            leaf_pos.setdefault(id(t), []).append(i)

    def sink(key, value):
        positions = [key[1]] if type(key) is tuple else leaf_pos.get(id(key), ())
        for i in positions:
            found[i] = value if found[i] is None else np.add(found[i], value)

    removers = [tape.add_grad_hook(t, np.zeros_like) for t in _no_grad_list(no_grad_vars)]
    try:
        tape.run_backward(roots, seeds, retain_graph=bool(retain_graph), sink=sink, watch=watch)
    finally:
        for remove in removers:
            remove()
    results = []
    for i, (t, value) in enumerate(zip(targets, found)):
        if value is None:
            if not allow_unused:
                raise ValueError(f"paddle.grad: input {i} ({t.name!r}) is not reached from the outputs; pass "
                                 "allow_unused=True to get None for it")
            results.append(None)
        else:
            results.append(Tensor._wrap(np.asarray(value, dtype=t._value.dtype), True))
    return results


def _no_grad_list(no_grad_vars):
    if no_grad_vars is None:
        return []
    return _as_list(no_grad_vars, "paddle.grad: no_grad_vars")[0]


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulate d(sum of tensors)/d(leaf) into every leaf's ``.grad`` in one backward pass."""
    roots, _ = _as_list(tensors, "paddle.autograd.backward: tensors")
    if len({id(t) for t in roots}) != len(roots):
        raise ValueError("paddle.autograd.backward: the same tensor appears twice in tensors")
    tape.run_backward(roots, _seeds(roots, grad_tensors, "paddle.autograd.backward"), retain_graph=retain_graph)


class HookRemoveHelper:
    """What ``register_hook`` returns: ``remove()`` unregisters the hook (True if it was there)."""

    def __init__(self, remover):
        self._remover = remover
        self._removed = False

    def remove(self) -> bool:
        if self._removed:
            return False
        self._removed = True
        self._remover()
        return True


def register_hook(tensor, hook):
    """``Tensor.register_hook``: see the module docstring."""
    if tensor.stop_gradient:
        raise RuntimeError(f"register_hook: tensor {tensor.name!r} has stop_gradient=True, so no gradient "
                           "reaches it; set stop_gradient=False first")
    if not callable(hook):
        raise TypeError(f"register_hook: hook must be callable, got {type(hook).__name__}")

    def on_grad(value):
        result = hook(Tensor._wrap(value, True))
        if result is None:
            return None
        out = np.asarray(result._value if isinstance(result, Tensor) else result)
        if out.shape != value.shape:
            raise ValueError(f"register_hook: the hook of {tensor.name!r} returned shape {list(out.shape)}, "
                             f"the gradient has shape {list(value.shape)}")
        return out.astype(value.dtype, copy=False)
    return HookRemoveHelper(tape.add_grad_hook(tensor, on_grad))
