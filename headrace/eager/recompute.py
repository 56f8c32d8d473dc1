"""Activation recompute in dygraph mode: ``recompute(function, *args, **kwargs)``.

Contract
--------
``recompute(function, *args, preserve_rng_state=True, use_reentrant=True, **kwargs)`` returns what
``function(*args, **kwargs)`` returns, with the same values and, after ``backward()``, the same
gradients bit for bit; but no activation computed inside ``function`` is kept for backward: only
the tensor inputs are kept, and ``function`` runs again when backward reaches it.

* ``use_reentrant=True``: the forward runs in ``track_only`` mode (outputs know whether they need
  a gradient; nothing is recorded).  One ``RecomputeNode`` stands for the whole call; its backward
  re-runs ``function`` with gradients on, on detached copies of the inputs, and runs the backward
  of that inner graph (parameters inside accumulate their ``.grad`` there), returning the inputs'
  gradients to the outer backward.  ``(*args, **kwargs)`` must bind to the function's signature
  (TypeError otherwise); a tuple argument must hold only tensors with one ``stop_gradient``
  (ValueError otherwise).  Unlike the reference, parameters inside get gradients even when no input
  requires grad.
* ``use_reentrant=False``: the forward runs normally, except that every array the tape would save
  is replaced by a ticket (``tape.saved_tensors_hooks``); the first ticket redeemed in backward
  re-runs ``function`` with hooks that collect the real arrays, and each is handed out once.
  A second backward (``retain_graph=True``) recomputes again.

``preserve_rng_state``: the global generator's state (and NumPy's and Python's global random
states) before the forward is replayed around the recomputation, and afterwards the stream is put
back where it was, so dropout masks repeat and recomputation does not advance the global stream.
When nothing inside needs a gradient, a warning says so and the outputs are returned as computed.
"""
from __future__ import annotations

import contextlib
import inspect
import random
import warnings

import numpy as np

from ..core import context
from ..core.random import default_generator
from ..ops.registry import Meta
from . import tape
from .tensor import Tensor

_NOTHING_NEEDS_GRAD = ("[Recompute]: nothing inside this recompute block needs a gradient (no input "
                       "and no parameter requires grad), so there is no need to recompute it in backward")


class _RngSnapshot:
    """The global generator's, NumPy's and Python's random states at one moment."""

    def __init__(self):
        self.generator = default_generator().get_state()
        self.numpy = np.random.get_state()
        self.python = random.getstate()

    def restore(self) -> None:
        default_generator().set_state(self.generator)
        np.random.set_state(self.numpy)
        random.setstate(self.python)

    @contextlib.contextmanager
    def replayed(self):
        """Run a block from this state, then put the streams back where they were."""
        current = _RngSnapshot()
        self.restore()
        try:
            yield
        finally:
            current.restore()


class _Inputs:
    """The call's arguments with every Tensor replaced by (array, stop_gradient): what is kept."""

    def __init__(self, args, kwargs):
        self.tensors = []                 # the caller's input tensors, in order
        self.args = [self._strip(a) for a in args]
        self.kwargs = {k: self._strip(v) for k, v in kwargs.items()}

    def _strip(self, value):
        if isinstance(value, Tensor):
            self.tensors.append(value)
            return _Slot(len(self.tensors) - 1, value._value, value.stop_gradient)
        if isinstance(value, tuple):
            return tuple(self._strip(v) for v in value)
        if isinstance(value, list):
            return [self._strip(v) for v in value]
        return value

    def rebuild(self):
        """Fresh leaf tensors (same data and stop_gradient) in the arguments' places."""
        leaves = [None] * len(self.tensors)
        args = [_build(a, leaves) for a in self.args]
        kwargs = {k: _build(v, leaves) for k, v in self.kwargs.items()}
        return args, kwargs, leaves


def _build(value, leaves):
    # a module-level function, not a recursive closure: a closure referring to itself is a
    # reference cycle, which would keep the leaves (and their gradients) alive until gc runs
    if isinstance(value, _Slot):
        leaf = Tensor._wrap(value.value, value.stop_gradient)
        leaves[value.index] = leaf
        return leaf
    if isinstance(value, tuple):
        return tuple(_build(v, leaves) for v in value)
    if isinstance(value, list):
        return [_build(v, leaves) for v in value]
    return value


class _Slot:
    __slots__ = ("index", "value", "stop_gradient")

    def __init__(self, index, value, stop_gradient):
        self.index, self.value, self.stop_gradient = index, value, stop_gradient


def _flat_tensors(outputs) -> list:
    """Every Tensor in the output, depth first through tuples, lists and dicts."""
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, (tuple, list)):
        return [t for o in outputs for t in _flat_tensors(o)]
    if isinstance(outputs, dict):
        return [t for o in outputs.values() for t in _flat_tensors(o)]
    return []


def _replace_tensors(outputs, make):
    """The output with every Tensor replaced by ``make(tensor)``, in ``_flat_tensors`` order."""
    if isinstance(outputs, Tensor):
        return make(outputs)
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_replace_tensors(o, make) for o in outputs)
    if isinstance(outputs, dict):
        return type(outputs)((k, _replace_tensors(v, make)) for k, v in outputs.items())
    return outputs


_OUTSIDE_TENSOR = ("recompute(use_reentrant=True): the function uses a tensor that needs a gradient but is "
                   "not one of its arguments (e.g. through a closure); its gradient cannot flow out of the "
                   "recomputed block. Pass it as an argument, or use use_reentrant=False")


def recompute(function, *args, **kwargs):
    """See the module docstring."""
    preserve = kwargs.pop("preserve_rng_state", True)
    use_reentrant = kwargs.pop("use_reentrant", True)
    if use_reentrant:
        offload = kwargs.pop("offload_indices", [])
        if offload:
            raise NotImplementedError("recompute: offload_indices (offloading inputs to the host) is not "
                                      "supported on this CPU-only build; pass offload_indices=[]")
    if not callable(function):
        raise TypeError(f"recompute: function must be callable (a Layer or a function), got "
                        f"{type(function).__name__}")
    if context.in_static_mode():
        raise RuntimeError("recompute(function, ...) is the dygraph API; in static mode use "
                           "paddle.incubate.optimizer.RecomputeOptimizer / append_backward(checkpoints=...)")
    if not tape.grad_enabled:
        return function(*args, **kwargs)
    if use_reentrant:
        return _recompute_reentrant(function, preserve, args, kwargs)
    return _recompute_with_hooks(function, preserve, args, kwargs)


# --- use_reentrant=True -------------------------------------------------------------------------
def _bind(function, args, kwargs):
    target = function.forward if callable(getattr(function, "forward", None)) else function
    signature = inspect.signature(target)
    if kwargs and any(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values()):
        raise ValueError("Currently, keyword-only arguments are not supported when you want to send "
                         "kwargs(dict parameter) to function with use_reentrant=True.")
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"recompute: the arguments do not fit "
                        f"{getattr(target, '__qualname__', target)}{signature}: {exc}") from None
    for value in bound.arguments.values():
        _check_tuple(value)
    return bound.args, bound.kwargs


def _check_tuple(value) -> None:
    if not isinstance(value, tuple) or not value:
        return
    tensors = [v for v in value if isinstance(v, Tensor)]
    if not tensors:
        return
    if len(tensors) != len(value):
        raise ValueError("Recompute receive a tuple containing tensor and non-tensor at same time.")
    if len({t.stop_gradient for t in tensors}) > 1:
        raise ValueError("Recompute receive a tuple containing tensor holds different stop gradient.")


class RecomputeNode(tape.Node):
    """One recomputed call on the outer tape (see the module docstring)."""

    __slots__ = ("function", "inputs", "rng", "needs_grad")

    def __init__(self, function, inputs, rng, edges, needs_grad, out_metas):
        super().__init__(edges, out_metas)
        self.function, self.inputs, self.rng, self.needs_grad = function, inputs, rng, needs_grad

    def label(self) -> str:
        return f"recompute({getattr(self.function, '__qualname__', type(self.function).__name__)})"

    def apply(self, out_grads):
        args, kwargs, leaves = self.inputs.rebuild()
        replay = self.rng.replayed() if self.rng is not None else contextlib.nullcontext()
        start = tape.next_seq()
        with replay, tape.enable_grad(), tape.recomputation():
            outputs = self.function(*args, **kwargs)
        tensors = _flat_tensors(outputs)
        if len(tensors) != len(out_grads):
            raise RuntimeError(f"{self.label()}: the recomputation returned {len(tensors)} tensors, the "
                               f"forward returned {len(out_grads)}; the function must be deterministic")
        roots = [(t, g) for t, g in zip(tensors, out_grads) if g is not None and not t.stop_gradient]
        if not roots:
            raise RuntimeError("none of output has requires_grad=True, this recompute() is not necessary")
        tape.run_backward([t for t, _ in roots], [g for _, g in roots], boundary=(start, _OUTSIDE_TENSOR))
        return [leaf._grad._value if leaf._grad is not None else None
                for leaf, needed in zip(leaves, self.needs_grad) if needed]

    def release(self):
        self.freed = True
        self.inputs = None


def _recompute_reentrant(function, preserve, args, kwargs):
    args, kwargs = _bind(function, args, kwargs)
    inputs = _Inputs(args, kwargs)
    rng = _RngSnapshot() if preserve else None
    with tape.track_only():
        outputs = function(*args, **kwargs)
    tensors = _flat_tensors(outputs)
    if all(t.stop_gradient for t in tensors):
        warnings.warn(_NOTHING_NEEDS_GRAD, stacklevel=3)
        return outputs
    needs_grad = [not t.stop_gradient for t in inputs.tensors]
    edges = [tape._edge_of(t) for t in inputs.tensors if not t.stop_gradient]
    node = RecomputeNode(function, inputs, rng, edges, needs_grad,
                         [Meta(t._value.shape, t._value.dtype) for t in tensors])
    index = iter(range(len(tensors)))

    def attach(t):
        out = Tensor._wrap(t._value, t.stop_gradient)
        position = next(index)
        if not t.stop_gradient:
            out._node, out._out_index = node, position
        return out

    return _replace_tensors(outputs, attach)


# --- use_reentrant=False ------------------------------------------------------------------------
class _Recomputation:
    """Tickets for the arrays the forward would have saved, redeemed by recomputing."""

    def __init__(self, function, inputs, rng):
        self.function, self.inputs, self.rng = function, inputs, rng
        self.count = 0
        self.storage = {}

    def pack(self, array):
        ticket = self.count
        self.count += 1
        return ticket

    def unpack(self, ticket):
        if ticket not in self.storage:
            self._recompute()
        return self.storage.pop(ticket)

    def _recompute(self) -> None:
        captured = []

        def collect(array):
            captured.append(array)
            return None

        args, kwargs, _ = self.inputs.rebuild()
        replay = self.rng.replayed() if self.rng is not None else contextlib.nullcontext()
        with replay, tape.enable_grad(), tape.recomputation(), tape.saved_tensors_hooks(collect, None):
            self.function(*args, **kwargs)
        if len(captured) != self.count:
            raise RuntimeError(f"recompute: the forward saved {self.count} tensors for backward, the "
                               f"recomputation {len(captured)}; the function must be deterministic")
        self.storage = dict(enumerate(captured))


def _recompute_with_hooks(function, preserve, args, kwargs):
    inputs = _Inputs(args, kwargs)
    rng = _RngSnapshot() if preserve else None
    recomputation = _Recomputation(function, inputs, rng)
    with tape.saved_tensors_hooks(recomputation.pack, recomputation.unpack):
        outputs = function(*args, **kwargs)
    if all(t.stop_gradient for t in _flat_tensors(outputs)):
        warnings.warn(_NOTHING_NEEDS_GRAD, stacklevel=3)
    return outputs
