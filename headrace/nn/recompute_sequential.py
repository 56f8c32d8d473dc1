"""``recompute_sequential(ctx, functions, *args)``: activation recompute over segments of a sequence.

Contract (the reference's ``paddle.incubate.distributed.fleet.recompute_sequential``)
------------------------------------------------------------------------------------
``functions`` is a ``Sequential`` (its sublayers, in order) or a list/tuple of callables, each
taking the previous one's output.  ``ctx`` is a dict: ``segments`` (int >= 1, default 1) and
``preserve_rng_state`` (default True).  With ``n`` functions and ``size = n // segments``, the first
``segments - 1`` chunks of ``size`` functions each run under ``recompute`` (their activations are
freed after the forward and recomputed in backward); the remaining functions run plainly.  The
result, and after ``backward()`` every gradient, is bit-identical to calling the functions in
order without recompute (``preserve_rng_state`` replays dropout masks).

Differences from the reference, deliberate: ``segments`` larger than the number of functions, or not
a positive int, is a ValueError (the reference silently runs nothing under recompute or divides by
zero); keys of ``ctx`` other than ``segments`` and ``preserve_rng_state`` are rejected by name
instead of ignored (the reference's hybrid-parallel keys ``mp_group``/``offload``/``partition`` mean
nothing here); and with ``segments=1`` the arguments are passed to the first function as
arguments (the reference passes them as one tuple).
"""
from __future__ import annotations

from ..eager.recompute import recompute
from .layer import Layer
from .layers import Sequential

_KEYS = ("segments", "preserve_rng_state")


def _functions(functions) -> list:
    if isinstance(functions, Sequential):
        return list(functions.children())
    if isinstance(functions, Layer):   # its forward is not a chain of its sublayers: running them would be wrong
        raise TypeError(f"recompute_sequential: functions must be a paddle.nn.Sequential or a list of callables; "
                        f"{type(functions).__name__} is a Layer but not a Sequential (wrap it: [layer] or "
                        "Sequential(layer))")
    if isinstance(functions, (list, tuple)) and all(callable(f) for f in functions):
        return list(functions)
    raise TypeError("recompute_sequential: functions must be a paddle.nn.Sequential or a list of callables, "
                    f"got {type(functions).__name__}")


def _chunk(funcs):
    def run(*args, **kwargs):
        out = funcs[0](*args, **kwargs)
        for f in funcs[1:]:
            out = f(out)
        return out
    return run


def recompute_sequential(ctx, functions, *args, **kwargs):
    """Run ``functions`` in order on ``args``, recomputing all but the last chunk (see module doc)."""
    if not isinstance(ctx, dict):
        raise TypeError(f"recompute_sequential: ctx must be a dict like {{'segments': 2}}, got {type(ctx).__name__}")
    unknown = sorted(set(ctx) - set(_KEYS))
    if unknown:
        raise ValueError(f"recompute_sequential: unknown ctx keys {unknown}; the keys are {list(_KEYS)}")
    segments = ctx.get("segments", 1)
    preserve = ctx.get("preserve_rng_state", True)
    if not isinstance(preserve, bool):
        raise TypeError(f"recompute_sequential: ctx['preserve_rng_state'] must be a bool, got {preserve!r}")
    funcs = _functions(functions)
    if not funcs:
        raise ValueError("recompute_sequential: functions is empty")
    if isinstance(segments, bool) or not isinstance(segments, int) or not 1 <= segments <= len(funcs):
        raise ValueError(f"recompute_sequential: ctx['segments'] must be an int from 1 to the number of "
                         f"functions ({len(funcs)}), got {segments!r}")
    size = len(funcs) // segments
    start = 0
    for _ in range(segments - 1):
        out = recompute(_chunk(funcs[start:start + size]), *args, preserve_rng_state=preserve, **kwargs)
        args, kwargs, start = (out,), {}, start + size
    return _chunk(funcs[start:])(*args, **kwargs)
