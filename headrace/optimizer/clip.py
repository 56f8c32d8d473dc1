"""Gradient clipping applied by the optimizer before regularization and updates
(``paddle.nn.ClipGradByValue``, ``ClipGradByNorm``, ``ClipGradByGlobalNorm``).

Each is called with ``[(param, grad)]`` and returns the clipped pairs; parameters created with
``ParamAttr(need_clip=False)`` pass through unchanged and pairs without a gradient
``(param, None)`` are dropped, in both modes, as the reference does.  Built on ``apply_op``: static mode
appends the ops (``clip``; ``clip_by_norm``; ``squared_l2_norm`` + ``sum`` + ``sqrt`` +
``elementwise_max`` + ``elementwise_div`` + ``elementwise_mul``), eager mode computes them.
"""
from __future__ import annotations

import numbers

from ..ops.apply import apply_op_single
from ..core.errors import ArgTypeError, AttrError, located


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise located(ArgTypeError, f"{what} must be a number, got {type(value).__name__}: {value!r}")
    return float(value)


def _clipped(param) -> bool:
    return getattr(param, "need_clip", True)


def _with_grads(params_grads) -> list:
    return [(p, g) for p, g in params_grads if g is not None]


class ClipGradBase:
    def __call__(self, params_grads) -> list:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in vars(self).items())})"


class ClipGradByValue(ClipGradBase):
    """Each gradient element clipped to ``[min, max]`` (``min`` defaults to ``-max``)."""

    def __init__(self, max, min=None):  # noqa: A002  (the reference's argument names)
        self.max = _number(max, "ClipGradByValue: max")
        self.min = -self.max if min is None else _number(min, "ClipGradByValue: min")
        if self.min > self.max:
            raise located(AttrError, f"ClipGradByValue: min ({self.min}) must be <= max ({self.max})")

    def __call__(self, params_grads):
        return [(p, apply_op_single("clip", {"X": g}, {"min": self.min, "max": self.max}))
                if _clipped(p) else (p, g) for p, g in _with_grads(params_grads)]


class ClipGradByNorm(ClipGradBase):
    """Each gradient scaled to L2 norm ``clip_norm`` when its norm is larger."""

    def __init__(self, clip_norm):
        self.clip_norm = _number(clip_norm, "ClipGradByNorm: clip_norm")
        if self.clip_norm <= 0:
            raise located(AttrError, f"ClipGradByNorm: clip_norm must be > 0, got {clip_norm}")

    def __call__(self, params_grads):
        return [(p, apply_op_single("clip_by_norm", {"X": g}, {"max_norm": self.clip_norm}))
                if _clipped(p) else (p, g) for p, g in _with_grads(params_grads)]


class ClipGradByGlobalNorm(ClipGradBase):
    """All clipped gradients scaled by ``clip_norm / max(global_norm, clip_norm)``, with
    ``global_norm = sqrt(sum of their squared L2 norms)``."""

    def __init__(self, clip_norm, group_name="default_group"):
        self.clip_norm = _number(clip_norm, "ClipGradByGlobalNorm: clip_norm")
        if self.clip_norm <= 0:
            raise located(AttrError, f"ClipGradByGlobalNorm: clip_norm must be > 0, got {clip_norm}")
        self.group_name = group_name

    def __call__(self, params_grads):
        params_grads = _with_grads(params_grads)
        # summed in the parameters' name order, whatever order the caller lists them in: static
        # mode sorts them by name first (as the reference's apply_gradients), eager mode keeps the
        # parameter list's order; float32 sums in two orders would make the two modes differ
        chosen = [g for p, g in sorted(params_grads, key=lambda pg: str(getattr(pg[0], "name", ""))) if _clipped(p)]
        if not chosen:
            return params_grads
        # mixed precisions: the norm is summed in float64 if any gradient is float64, else in
        # float32, and the scale is cast to each gradient's dtype
        norm_dtype = "float64" if any(str(g.dtype) == "float64" for g in chosen) else "float32"
        squares = [_cast(apply_op_single("squared_l2_norm", {"X": g}), norm_dtype) for g in chosen]
        total = apply_op_single("sum", {"X": squares}) if len(squares) > 1 else squares[0]
        norm = apply_op_single("sqrt", {"X": total})
        limit = apply_op_single("fill_constant", {}, {"shape": [1], "dtype": norm_dtype, "value": self.clip_norm})
        scale = apply_op_single("elementwise_div",
                                {"X": limit, "Y": apply_op_single("elementwise_max", {"X": norm, "Y": limit})})
        scales = {}
        for g in chosen:
            dtype = str(g.dtype)
            if dtype not in scales:
                scales[dtype] = _cast(scale, dtype)
        return [(p, apply_op_single("elementwise_mul", {"X": g, "Y": scales[str(g.dtype)]}))
                if _clipped(p) else (p, g) for p, g in params_grads]


def _cast(x, dtype: str):
    if str(x.dtype) == dtype:
        return x
    return apply_op_single("cast", {"X": x}, {"in_dtype": str(x.dtype), "out_dtype": dtype})


# fluid 1.x names
GradientClipByValue = ClipGradByValue
GradientClipByNorm = ClipGradByNorm
GradientClipByGlobalNorm = ClipGradByGlobalNorm


def check_grad_clip(value):
    if value is not None and not isinstance(value, ClipGradBase):
        raise located(ArgTypeError, "grad_clip must be ClipGradByValue, ClipGradByNorm or ClipGradByGlobalNorm (or None), "
                        f"got {type(value).__name__}: {value!r}")
    return value


__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipByGlobalNorm",
           "GradientClipByNorm", "GradientClipByValue"]
