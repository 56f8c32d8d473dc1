"""Scope: where variable values live between runs (parameters, optimizer state, fed data)."""
from __future__ import annotations

import contextlib

import numpy as np

from ..core.dtypes import convert_dtype
from .memory import cpu as _tracker


class LoDTensor:
    """A tensor value in a scope; convertible with ``np.array(t)`` and settable with ``set``."""

    __slots__ = ("_array", "_lod", "_writes")

    def __init__(self, array=None):
        self._array = None
        self._lod = []
        self._writes = 0   # counts stores, including in-place updates stored back (see _write_mark)
        if array is not None:
            self._store(np.asarray(array))

    @classmethod
    def _untracked(cls, array) -> "LoDTensor":
        """A tensor handed to the user (e.g. a fetch result): not counted as runtime memory."""
        tensor = cls()
        tensor._array = array
        return tensor

    def _store(self, array) -> None:
        old = self._array
        self._writes += 1
        if array is old:   # an update in place stored back: counted already
            return
        self._array = array
        _tracker.acquire(array)
        if old is not None:
            _tracker.release(old)

    def set(self, array, place=None) -> None:
        """Copy ``array`` into this tensor (``place`` is accepted for API compatibility).  A tensor
        that holds a value keeps its shape and dtype: a value of another shape or dtype is an
        error (it would broadcast, or silently change the program's dtype)."""
        from ..core.errors import DTypeError, ShapeError
        from .places import check_runnable

        check_runnable(place)
        value = np.array(array, copy=True)
        old = self._array
        if old is not None and (value.shape != old.shape or value.dtype != old.dtype):
            error = ShapeError if value.shape != old.shape else DTypeError
            raise error(f"LoDTensor.set: the tensor holds shape {list(old.shape)} dtype {old.dtype}, the new value "
                        f"has shape {list(value.shape)} dtype {value.dtype}; convert it first (e.g. "
                        f"value.astype('{old.dtype}').reshape({list(old.shape)}))")
        self._store(value)

    def _clear(self) -> None:
        if self._array is not None:
            _tracker.release(self._array)
            self._array = None

    def _is_initialized(self) -> bool:
        return self._array is not None

    def shape(self) -> list:
        return list(self._array.shape) if self._array is not None else []

    def _dtype(self):
        return convert_dtype(self._array.dtype) if self._array is not None else None

    def lod(self) -> list:
        return list(self._lod)

    def set_lod(self, lod) -> None:
        self._lod = [list(level) for level in lod]

    def recursive_sequence_lengths(self) -> list:
        """The LoD as sequence lengths per level (``[]`` for a plain tensor; see ``runtime/lod.py``)."""
        return [list(level) for level in self._lod]

    def set_recursive_sequence_lengths(self, lengths) -> None:
        self._lod = [[int(n) for n in level] for level in lengths]

    def has_valid_recursive_sequence_lengths(self) -> bool:
        from .lod import valid_lengths

        return valid_lengths(self._lod, self._array.shape[0] if self._array is not None else 0)

    def numpy(self) -> np.ndarray:
        return np.array(self._array, copy=True)

    def __array__(self, dtype=None, copy=None):
        if self._array is None:
            raise ValueError("the tensor is not initialized")
        arr = self._array if dtype is None else self._array.astype(dtype)
        return np.array(arr, copy=True) if copy else arr

    def __repr__(self):
        if self._array is None:
            return "LoDTensor(<uninitialized>)"
        return f"LoDTensor(shape={list(self._array.shape)}, dtype={self._array.dtype})"


class ScopeVariable:
    """A named slot in a scope holding one LoDTensor."""

    __slots__ = ("name", "_tensor")

    def __init__(self, name: str):
        self.name = name
        self._tensor = LoDTensor()

    def get_tensor(self) -> LoDTensor:
        return self._tensor

    def is_initialized(self) -> bool:
        return self._tensor._is_initialized()


class Scope:
    """Name -> value table with an optional parent for lookups."""

    def __init__(self, parent: "Scope | None" = None):
        self._vars: dict[str, ScopeVariable] = {}
        self._parent = parent
        self._kids: list[Scope] = []

    def var(self, name: str) -> ScopeVariable:
        """Find ``name`` here (not in parents), creating it if absent."""
        v = self._vars.get(name)
        if v is None:
            v = self._vars[name] = ScopeVariable(name)
        return v

    def find_var(self, name: str) -> ScopeVariable | None:
        scope = self
        while scope is not None:
            v = scope._vars.get(name)
            if v is not None:
                return v
            scope = scope._parent
        return None

    def local_var_names(self) -> list:
        return list(self._vars)

    def new_scope(self) -> "Scope":
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self) -> None:
        for kid in self._kids:
            kid._drop()
        self._kids = []

    def _drop(self) -> None:
        for v in self._vars.values():
            v.get_tensor()._clear()
        self._vars.clear()
        self.drop_kids()

    def erase(self, names) -> None:
        for name in names:
            v = self._vars.pop(name, None)
            if v is not None:
                v.get_tensor()._clear()

    # runtime access --------------------------------------------------------------------------
    def _get_array(self, name: str):
        v = self.find_var(name)
        if v is None or v._tensor._array is None:
            return None
        return v._tensor._array

    def _set_array(self, name: str, array) -> None:
        self.var(name).get_tensor()._store(array)

    def _write_mark(self, name: str):
        """(array, number of stores) of a variable, or None: changes whenever the value is stored,
        also when an update op stored the same, in-place-updated array (data parallel uses it to
        notice that place 0's persistables changed between its runs)."""
        var = self.find_var(name)
        if var is None:
            return None
        tensor = var.get_tensor()
        return None if tensor._array is None else (tensor._array, tensor._writes)


_global_scope = Scope()


def global_scope() -> Scope:
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope: Scope):
    """Make ``scope`` the global scope inside the block."""
    global _global_scope
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard expects a Scope, got {type(scope).__name__}")
    old, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = old
