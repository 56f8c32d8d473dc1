"""The eager tape: grad mode, recorded nodes and the backward engine.

Contract
--------
Every op the eager runner executes while gradients are enabled, with an input that requires
grad and a differentiable type, becomes an ``OpNode`` (``opnode.py``): the gradient ops its rule
(``OpDef.grad``, the same rule static autodiff appends) describes for the inputs that require
grad, the forward arrays those gradient ops read (a shape/dtype ``Meta`` for slots the gradient
op declares ``no_need_buffer``, so the tape keeps no activation it does not need), an edge per
input that requires grad and the shape/dtype of each output (to zero-fill a gradient that
never arrives).  ``backward`` runs the gradient ops of every node reachable from the roots,
newest node first (the reverse of the forward order, as the static backward), sums the
contributions to each output, accumulates into the ``.grad`` of leaf tensors and frees each
node's saved arrays after running it unless ``retain_graph``; a second backward through a
freed node is an error naming the op and the line that ran it.

Names: a node's gradient ops talk in names local to the node (``in:<slot>:<k>`` and
``out:<slot>:<k>``), so a rule sees distinct names even when one tensor fills two slots
(``x * x``) and its two gradients both accumulate into ``x``.

Modes: ``no_grad`` turns recording and gradient tracking off; ``track_only`` keeps tracking
(outputs know whether they require grad) but records nothing (recompute's forward).
``saved_tensors_hooks(pack, unpack)`` passes every array a node saves through ``pack`` and
hands the node ``unpack(packed)`` when backward needs it (recompute without re-entry).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import weakref

import numpy as np

from ..core.errors import HeadraceError
from ..ops.registry import Meta

grad_enabled = True     # gradients tracked (outputs may require grad)
recording = True        # nodes recorded (False inside track_only)
_hooks: list = []       # stack of (pack, unpack)
grad_listeners: list = []  # objects told when a leaf's gradient is final in a backward (_LeafCounter)
_seq = itertools.count()


class GraphFreedError(HeadraceError, RuntimeError):
    """backward() reached a node whose saved values an earlier backward() released."""


# --- modes ------------------------------------------------------------------------------------
class no_grad:  # noqa: N801  (Paddle's spelling; a context manager and a decorator)
    """Run without recording or tracking gradients: outputs are ``stop_gradient``."""

    def __enter__(self):
        global grad_enabled, recording
        self._old = (grad_enabled, recording)
        grad_enabled = recording = False
        return self

    def __exit__(self, *exc):
        global grad_enabled, recording
        grad_enabled, recording = self._old
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with no_grad():
                return func(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):  # noqa: N801
    """Track and record gradients (inside ``no_grad`` too)."""

    def __enter__(self):
        global grad_enabled, recording
        self._old = (grad_enabled, recording)
        grad_enabled = recording = True
        return self

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with enable_grad():
                return func(*args, **kwargs)
        return wrapper


@contextlib.contextmanager
def track_only():
    """Outputs know whether they require grad, but no node is recorded."""
    global grad_enabled, recording
    old = (grad_enabled, recording)
    grad_enabled, recording = True, False
    try:
        yield
    finally:
        grad_enabled, recording = old


_tracked: dict = {}     # id -> weakref: outputs computed under track_only (nodeless, yet no leaves)


def note_tracked(t) -> None:
    """``t`` was computed under ``track_only``: it has no node, but it is not a leaf the user made
    (an in-place change of it is allowed, as of any intermediate)."""
    key = id(t)
    _tracked[key] = weakref.ref(t, lambda _, k=key: _tracked.pop(k, None))


def computed_while_tracking(t) -> bool:
    ref = _tracked.get(id(t))
    return ref is not None and ref() is t


def is_grad_enabled() -> bool:
    return grad_enabled


@contextlib.contextmanager
def saved_tensors_hooks(pack, unpack):
    """Arrays saved by nodes recorded inside go through ``pack``; backward calls ``unpack``."""
    _hooks.append((pack, unpack))
    try:
        yield
    finally:
        _hooks.pop()


class _Packed:
    __slots__ = ("value", "unpack")

    def __init__(self, value, unpack):
        self.value, self.unpack = value, unpack


# --- nodes ------------------------------------------------------------------------------------
class Node:
    """A recorded step: ``apply(out_grads) -> in_grads`` (one per edge).

    ``edges[i]`` is the leaf Tensor or ``(node, output_index)`` that receives the i-th input
    gradient; ``out_metas[j]`` the shape/dtype of output j (to fill a gradient that never arrives
    with zeros; None where that cannot happen: a node of one output runs only once its gradient
    arrived).
    """

    __slots__ = ("seq", "edges", "out_metas", "freed", "__weakref__")

    def __init__(self, edges, out_metas):
        self.seq = next(_seq)
        self.edges = edges
        self.out_metas = out_metas
        self.freed = False

    def label(self) -> str:
        return type(self).__name__

    def apply(self, out_grads: list) -> list:
        raise NotImplementedError

    def release(self) -> None:
        self.freed = True


def hooked() -> bool:
    """Whether a ``saved_tensors_hooks`` pair is active (saved arrays go through ``pack_saved``)."""
    return bool(_hooks)


def pack_saved(value):
    """What a node stores for an array it saves (through the innermost pack hook, if any)."""
    if _hooks and type(value) is not Meta:
        pack, unpack = _hooks[-1]
        return _Packed(pack(value), unpack)
    return value


# --- the engine ---------------------------------------------------------------------------------
def _edge_of(tensor):
    """Where a gradient for ``tensor`` goes: its producer ``(node, index)``, or the leaf itself."""
    if tensor._node is not None:
        return (tensor._node, tensor._out_index)
    return tensor


def _add(a, b):
    return b if a is None else np.add(a, b)


class GraphBoundaryError(HeadraceError, RuntimeError):
    """An inner backward (reentrant recompute) reached a node recorded before its own graph."""


recomputing = False   # inside a recompute's second forward: values the caller passed as outputs stay


@contextlib.contextmanager
def recomputation():
    """Recompute's second forward: ops do not write into Tensors the caller passed as outputs
    (running statistics), which the first forward already updated."""
    global recomputing
    old, recomputing = recomputing, True
    try:
        yield
    finally:
        recomputing = old


def next_seq() -> int:
    """The sequence number the next recorded node will get (nodes made later have larger ones)."""
    return next(_seq)


def _reachable(roots, boundary) -> list:
    """Every node reachable from the nodes ``roots``, newest first (largest ``seq``): an op is
    recorded after the ops that made its inputs, so in that order every node comes after all
    the nodes its outputs feed -- its gradient is complete when its turn comes."""
    nodes = list(roots)
    seen = set(nodes)
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.freed:
            raise GraphFreedError(
                f"{node.label()}: backward() through this part of the graph a second time, but "
                "the first backward() freed its saved values; pass retain_graph=True to the first "
                "backward() to run backward through it again")
        for edge in node.edges:
            if type(edge) is tuple:
                parent = edge[0]
                if parent not in seen:
                    if boundary is not None and parent.seq < boundary[0]:
                        raise GraphBoundaryError(boundary[1])
                    seen.add(parent)
                    stack.append(parent)
                    nodes.append(parent)
    nodes.sort(key=_SEQ, reverse=True)
    return nodes


_SEQ = operator.attrgetter("seq")


class _LeafCounter:
    """Tells ``grad_listeners`` (``leaf_ready(tensor)``, ``backward_done()``) when a leaf's gradient
    is final in this backward: when the last edge into it has been processed."""

    def __init__(self, nodes, roots):
        self.pending = {}
        for node in nodes:
            for edge in node.edges:
                if type(edge) is not tuple and edge is not None:
                    self.pending[id(edge)] = self.pending.get(id(edge), 0) + 1
        self.listeners = list(grad_listeners)
        for root in roots:
            if root._node is None:
                self.arrived(root, counted=False)

    def arrived(self, leaf, counted=True) -> None:
        left = self.pending.get(id(leaf), 0) - counted
        self.pending[id(leaf)] = left
        if left == 0:
            for listener in self.listeners:
                listener.leaf_ready(leaf)

    def done(self) -> None:
        for listener in self.listeners:
            listener.backward_done()


# gradient hooks (``Tensor.register_hook``): id(leaf tensor) -> hooks (Tensors compare elementwise,
# so they are no dict keys; the entry goes when the tensor does), node -> {output index: hooks}
_leaf_hooks: dict = {}
_node_hooks = weakref.WeakKeyDictionary()
_node_hooks_added = False   # no node hook was ever added: backward skips the (slow) weak dict's len


def add_grad_hook(tensor, hook):
    """Call ``hook(grad array) -> array or None`` on the gradient reaching ``tensor``; returns a
    function that removes it."""
    global _node_hooks_added
    if tensor._node is not None:
        _node_hooks_added = True
        hooks = _node_hooks.setdefault(tensor._node, {}).setdefault(tensor._out_index, [])
    else:
        key = id(tensor)
        if key not in _leaf_hooks:
            _leaf_hooks[key] = []
            weakref.finalize(tensor, _leaf_hooks.pop, key, None)
        hooks = _leaf_hooks[key]
    hooks.append(hook)
    return lambda: any(h is hook for h in hooks) and hooks.remove(hook)


def _hooked(hooks, grad):
    for hook in list(hooks):
        result = hook(grad)
        if result is not None:
            grad = result
    return grad


def _to_leaf(tensor, grad, sink):
    hooks = _leaf_hooks.get(id(tensor)) if _leaf_hooks else None
    if hooks:
        grad = _hooked(hooks, grad)
    if sink is None:
        tensor._accumulate_grad(grad)
    else:
        sink(tensor, grad)


def _node_outputs_ready(node, out_grads, watch, sink) -> None:
    """A node's output gradients are complete: run its tensors' hooks, hand watched ones to sink."""
    hooks = _node_hooks.get(node) if _node_hooks else None
    if hooks:
        for index, funcs in hooks.items():
            if out_grads[index] is not None:
                out_grads[index] = _hooked(funcs, out_grads[index])
    if watch:
        for index, grad in enumerate(out_grads):
            key = watch.get((node, index))
            if key is not None and grad is not None:
                sink(key, grad)


_backward_depth = [0]   # > 0 inside a backward (a reentrant recompute runs one within another)


def run_backward(roots, root_grads, retain_graph=False, boundary=None, sink=None, watch=None) -> None:
    """Backpropagate ``root_grads`` (arrays) from the tensors ``roots`` into leaf ``.grad``.
    ``boundary`` = (first seq, message): reaching a node recorded earlier raises that message.
    ``sink(tensor, grad)`` receives the leaves' gradients instead of ``.grad`` (``paddle.grad``),
    and ``watch`` maps ``(node, output index)`` of non-leaf tensors to the key ``sink`` gets their
    complete gradient under.  ``grad_listeners`` hear about the outermost backward into ``.grad``
    only: a leaf reached only through a nested one (a recompute's) may still get gradient from
    elsewhere, so it counts as ready at the end."""
    _backward_depth[0] += 1
    try:
        _run_backward(roots, root_grads, retain_graph, boundary, sink, watch,
                      notify=_backward_depth[0] == 1 and sink is None)
    finally:
        _backward_depth[0] -= 1


def _apply_node(node, out_grads) -> list:
    """``node.apply`` with recording and tracking off (as under ``no_grad``, without making one);
    Nones when no gradient reached the node's outputs."""
    global grad_enabled, recording
    for grad in out_grads or ():
        if grad is not None:
            break
    else:
        return [None] * len(node.edges)
    grad = None   # (a donation in ``node.apply`` counts the references to a gradient)
    enabled, recorded = grad_enabled, recording
    grad_enabled = recording = False
    try:
        return node.apply(out_grads)
    finally:
        grad_enabled, recording = enabled, recorded


def _run_backward(roots, root_grads, retain_graph, boundary, sink, watch, notify) -> None:
    pending = {}       # node -> [grad per output]
    starts = {}        # the roots' nodes
    for tensor, grad in zip(roots, root_grads):
        edge = _edge_of(tensor)
        if type(edge) is tuple:
            node, index = edge
            if boundary is not None and node.seq < boundary[0]:
                raise GraphBoundaryError(boundary[1])
            grads = pending.setdefault(node, [None] * len(node.out_metas))
            grads[index] = _add(grads[index], grad)
            starts[node] = True
        else:
            _to_leaf(edge, grad, sink)
    tensor = grad = None   # (see the end of the loop below)
    nodes = _reachable(starts, boundary)
    leaves = _LeafCounter(nodes, roots) if grad_listeners and notify else None
    for node in nodes:
        out_grads = pending.pop(node, None)
        if out_grads is not None and (watch or (_node_hooks_added and _node_hooks)):
            _node_outputs_ready(node, out_grads, watch, sink)
        in_grads = _apply_node(node, out_grads)
        if not retain_graph:
            node.release()
        for edge, grad in zip(node.edges, in_grads):
            if type(edge) is tuple:
                if grad is not None:
                    parent, index = edge
                    grads = pending.get(parent)
                    if grads is None:
                        grads = pending[parent] = [None] * len(parent.out_metas)
                    old = grads[index]
                    grads[index] = grad if old is None else np.add(old, grad)
            else:
                if grad is not None:
                    _to_leaf(edge, grad, sink)
                if leaves is not None and edge is not None:
                    leaves.arrived(edge)
        # drop this node's references to the gradients it passed on: a parent's ``apply`` may then
        # write into a gradient only it holds (``OpNode._plan_donations``)
        in_grads = grad = grads = old = None
    if leaves is not None:
        leaves.done()
