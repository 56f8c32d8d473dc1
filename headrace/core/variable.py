"""Variable and Parameter: named, typed slots of a Block.

A Variable holds no data; the Scope does. Python operators (``+``, ``@``, ``<`` ...) append ops;
they are bound by ``headrace.nn.operators`` at import time, onto eager Tensors too (this module may
not import upward).
Because ``==`` builds an ``equal`` op, a Variable has no truth value: ``if var:`` and ``var in
list`` raise a TypeError instead of answering wrongly. Compare Variables with ``is``.
"""
from __future__ import annotations

from . import dtypes

LOD_TENSOR = "LOD_TENSOR"
SELECTED_ROWS = "SELECTED_ROWS"
STEP_SCOPES = "STEP_SCOPES"
READER = "READER"
RAW = "RAW"
VAR_TYPES = (LOD_TENSOR, SELECTED_ROWS, STEP_SCOPES, READER, RAW)


def normalize_shape(shape) -> tuple | None:
    """``None`` entries become -1; the shape becomes a tuple of ints."""
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    out = []
    for dim in shape:
        if dim is None:
            out.append(-1)
        else:
            try:
                value = int(dim)
            except (TypeError, ValueError):
                raise TypeError(f"shape entries must be int or None, got {dim!r} in {shape!r}") from None
            if value < -1:
                raise ValueError(f"shape entries must be >= -1, got {value} in {tuple(shape)!r}")
            out.append(value)
    return tuple(out)


class Variable:
    """A variable of a Block: name, shape (-1 for an unknown dim), dtype and flags."""

    def __init__(self, block, name, shape=None, dtype=None, persistable=False,
                 stop_gradient=False, type=LOD_TENSOR, lod_level=0, is_data=False,
                 need_check_feed=False):
        if not isinstance(name, str) or not name:
            raise TypeError(f"variable name must be a non-empty str, got {name!r}")
        if type not in VAR_TYPES:
            raise ValueError(f"variable {name!r}: type must be one of {VAR_TYPES}, got {type!r}")
        self.block = block
        self.name = name
        self.shape = normalize_shape(shape)
        self.dtype = dtypes.convert_dtype(dtype) if dtype is not None else None
        self.persistable = bool(persistable)
        self.stop_gradient = bool(stop_gradient)
        self.type = type
        self.lod_level = int(lod_level)
        self.is_data = bool(is_data)
        self.need_check_feed = bool(need_check_feed)

    # --- structure -------------------------------------------------------------------------
    @property
    def op(self):
        """The last op of this variable's block that writes it (``None`` for feeds/params)."""
        for op in reversed(self.block.ops):
            if self.name in op.output_arg_names:
                return op
        return None

    @property
    def program(self):
        return self.block.program

    @property
    def ndim(self) -> int:
        return len(self.shape) if self.shape is not None else -1

    def _spec(self) -> dict:
        return {
            "name": self.name,
            "shape": list(self.shape) if self.shape is not None else None,
            "dtype": str(self.dtype) if self.dtype is not None else None,
            "persistable": self.persistable,
            "stop_gradient": self.stop_gradient,
            "type": self.type,
            "lod_level": self.lod_level,
            "is_data": self.is_data,
            "need_check_feed": self.need_check_feed,
        }

    # --- identity and truth -----------------------------------------------------------------
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError(
            f"the truth value of static Variable {self.name!r} is not known while the program "
            "is being built; compare Variables with `is`, or fetch the value with an Executor")

    def __len__(self):
        if self.shape is None or not self.shape or self.shape[0] < 0:
            raise TypeError(f"len() of Variable {self.name!r} with shape {self.shape} is not known at build time")
        return self.shape[0]

    def __iter__(self):
        raise TypeError(f"static Variable {self.name!r} is not iterable; use split/slice ops")

    def __repr__(self):
        return self.to_string()

    __str__ = __repr__

    def to_string(self, throw_on_error=False, with_details=False) -> str:
        shape = ", ".join(str(d) for d in self.shape) if self.shape is not None else "?"
        kind = "persist " if self.persistable else ""
        text = (f"{kind}var {self.name} : {self.type}.shape({shape})"
                f".dtype({self.dtype}).stop_gradient({self.stop_gradient})")
        return text


class Parameter(Variable):
    """A persistable, trainable Variable created through ``Block.create_parameter``."""

    def __init__(self, block, name, shape, dtype, trainable=True, optimize_attr=None,
                 regularizer=None, do_model_average=None, need_clip=True, **kwargs):
        if shape is None:
            raise ValueError(f"parameter {name!r} needs a shape")
        shape = normalize_shape(shape)
        for dim in shape:
            if dim <= 0:
                raise ValueError(f"parameter {name!r}: every dimension must be positive, got shape {list(shape)}")
        kwargs.setdefault("persistable", True)
        kwargs["stop_gradient"] = not trainable
        super().__init__(block, name, shape=shape, dtype=dtype, **kwargs)
        self.trainable = bool(trainable)
        self.optimize_attr = dict(optimize_attr) if optimize_attr else {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.do_model_average = do_model_average
        self.need_clip = need_clip

    def _spec(self) -> dict:
        spec = super()._spec()
        spec["parameter"] = {
            "trainable": self.trainable,
            "optimize_attr": self.optimize_attr,
            "regularizer": _regularizer_spec(self.regularizer),
            "do_model_average": self.do_model_average,
            "need_clip": self.need_clip,
        }
        return spec

    def to_string(self, throw_on_error=False, with_details=False) -> str:
        text = super().to_string()
        prefix = "trainable param " if self.trainable else "param "
        return text.replace("persist var ", "persist " + prefix, 1)


def _regularizer_spec(regularizer):
    if regularizer is None:
        return None
    to_dict = getattr(regularizer, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"regularizer {regularizer!r} cannot be serialized (it has no to_dict())")
    return to_dict()


# Filled by headrace.regularizer once it exists: spec dict -> regularizer object.
regularizer_from_spec = None
