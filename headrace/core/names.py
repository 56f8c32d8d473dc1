"""Unique names and gradient-name spelling.

This module is the only place that spells the gradient suffix; everything else calls
``grad_name`` / ``strip_grad_suffix``.  ``generate(key)`` follows the reference system's
scheme: ``fc`` -> ``fc_0``, ``fc_1``, ...; ``guard()`` gives a fresh namespace.
"""
from __future__ import annotations

import contextlib
import re
from collections import defaultdict

GRAD_SUFFIX = "@GRAD"
RENAME_MARK = "@RENAME@"
EMPTY_VAR_NAME = "@EMPTY@"


class UniqueNameGenerator:
    """Per-key counters; ``prefix`` is prepended to every generated name."""

    def __init__(self, prefix: str | None = None):
        self.ids = defaultdict(int)
        self.prefix = prefix or ""

    def __call__(self, key: str) -> str:
        index = self.ids[key]
        self.ids[key] += 1
        return f"{self.prefix}{key}_{index}"


_generator = UniqueNameGenerator()


def generate(key: str) -> str:
    """Return ``key_N`` with N counting up per key in the current generator."""
    return _generator(key)


def generate_with_ignorable_key(key: str) -> str:
    return _generator(key)


def switch(new_generator: UniqueNameGenerator | None = None) -> UniqueNameGenerator:
    """Install ``new_generator`` (or a fresh one) and return the previous generator."""
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Run a block with its own name counters (a str argument becomes a name prefix)."""
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    elif isinstance(new_generator, bytes):
        new_generator = UniqueNameGenerator(new_generator.decode())
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)


def grad_name(name: str) -> str:
    """The gradient variable name of ``name``: ``x`` -> ``x@GRAD``."""
    return name + GRAD_SUFFIX


def rename_grad(name: str, block_idx: int, k: int) -> str:
    """A partial gradient's name when several ops contribute to ``name`` (already a grad name)."""
    return f"{name}{RENAME_MARK}block{block_idx}@{k}"


_GRAD_PREFIX = re.compile(r"^(grad/)+")


def strip_grad_suffix(name: str) -> str:
    """The forward name behind a gradient name.

    ``x@GRAD`` -> ``x``; ``x@GRAD@GRAD`` -> ``x``; ``x@GRAD@RENAME@block0@1`` -> ``x``;
    ``grad/grad/x@GRAD`` -> ``x``; ``x@GRAD_slice_0@GRAD`` -> ``x@GRAD_slice_0`` (the suffix counts
    only where it ends the name or is followed by ``@``).
    """
    name = _GRAD_PREFIX.sub("", name)
    pos = name.find(GRAD_SUFFIX)
    while pos != -1:
        end = pos + len(GRAD_SUFFIX)
        if end == len(name) or name[end] == "@":
            return name[:pos]
        pos = name.find(GRAD_SUFFIX, end)
    return name


RECOMPUTE_MARK = ".subprog_"


def recompute_name(name: str, segment: int) -> str:
    """The name of ``name`` recomputed inside the backward for segment ``segment``
    (counted from the last segment, as the reference system does)."""
    return f"{name}{RECOMPUTE_MARK}{segment}"
