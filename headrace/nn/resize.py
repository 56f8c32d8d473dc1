"""``F.pad`` / ``F.zeropad2d`` and ``F.interpolate`` / ``F.upsample`` (both modes), and the layers
``Pad1D/2D/3D``, ``ZeroPad1D/2D/3D``, ``ConstantPad*``, ``ReflectionPad*``, ``ReplicationPad*``,
``CircularPad*`` (also spelled ``...Pad2d``), ``Upsample``, ``UpsamplingNearest2D``,
``UpsamplingBilinear2D``.

``F.pad`` follows the reference's pad-list rules (x has N dims):
- ``mode='constant'`` and ``len(pad) == 2N``: one (before, after) pair per dim, from the first dim
  (``pad_from_left_axis=True``) or from the last (``False``); op ``pad``.
- ``len(pad) == 2 (N - 2)`` (N = 3, 4, 5), or any non-constant mode (which requires that length):
  the spatial dims of ``data_format`` (default NCL / NCHW / NCDHW), listed from the last spatial dim:
  ``[left, right]``, ``[left, right, top, bottom]``, ``[left, right, top, bottom, front, back]``;
  op ``pad3d`` on the input viewed as 5-D.
- other even lengths (constant): pairs from the last dim backwards; an odd length gets a trailing 0.
"""
from __future__ import annotations

import numbers

from ..core.errors import ArgTypeError, AttrError, ShapeError, located, fmt_shape
from ..ops.apply import apply_op_single
from .layer import Layer
from .tensor import _key, reshape

_FORMATS = {3: ("NCL", "NLC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}
_MODES = ("constant", "reflect", "replicate", "circular")


def _int_list(pad, what):
    if isinstance(pad, numbers.Integral):
        return [int(pad)]
    try:
        values = [int(v) for v in pad]
    except TypeError:
        raise located(ArgTypeError, f"{what}: pad must be a list or tuple of ints, got {type(pad).__name__}: {pad!r}") from None
    return values


def _spatial_pad(x, pad, mode, value, data_format, name):
    rank = len(x.shape)
    if rank not in _FORMATS:
        raise located(ShapeError, f"pad(): mode {mode!r} / a pad of length 2*(N-2) needs a 3-D, 4-D or 5-D input, got "
                         f"{fmt_shape(x.shape)}")
    data_format = data_format or _FORMATS[rank][0]
    if data_format not in _FORMATS[rank]:
        raise located(AttrError, f"pad(): data_format for a {rank}-D input must be one of {_FORMATS[rank]}, got "
                         f"{data_format!r}")
    if len(pad) != 2 * (rank - 2):
        raise located(AttrError, f"pad(): mode {mode!r} on a {rank}-D input needs {2 * (rank - 2)} pad values "
                         f"([left, right{', top, bottom' if rank > 3 else ''}{', front, back' if rank > 4 else ''}]), "
                         f"got {pad}")
    channel_last = data_format[-1] == "C"
    shape = list(x.shape)
    spatial = shape[1:-1] if channel_last else shape[2:]
    full = [1] * (3 - len(spatial)) + spatial           # viewed as [N, C, D, H, W] / [N, D, H, W, C]
    view = [shape[0]] + full + [shape[-1]] if channel_last else shape[:2] + full
    paddings = list(pad) + [0] * (6 - len(pad))
    out = apply_op_single("pad3d", {"X": reshape(x, view)},
                          {"paddings": paddings, "mode": mode, "value": float(value),
                           "data_format": "NDHWC" if channel_last else "NCDHW"}, name_key=_key("pad3d", name))
    kept = [d if d == -1 else d + paddings[2 * i] + paddings[2 * i + 1]
            for i, d in enumerate(reversed(spatial))][::-1]
    return reshape(out, [shape[0]] + kept + [shape[-1]] if channel_last else shape[:2] + kept)


def pad(x, pad, mode="constant", value=0.0, data_format=None, pad_from_left_axis=True, name=None):
    """Pad ``x`` by the list ``pad`` (see the module docstring for the order)."""
    if mode not in _MODES:
        raise located(AttrError, f"pad(): mode must be one of {_MODES}, got {mode!r}")
    pad = _int_list(pad, "pad()")
    if any(p < 0 for p in pad):
        raise located(AttrError, f"pad(): pad values must be >= 0 (cropping is not supported), got {pad}")
    rank = len(x.shape)
    if mode != "constant" or (len(pad) == 2 * (rank - 2) and rank in _FORMATS):
        return _spatial_pad(x, pad, mode, value, data_format, name)
    if len(pad) % 2:
        pad = pad + [0]
    if len(pad) > 2 * rank:
        raise located(AttrError, f"pad(): at most {2 * rank} pad values for a {rank}-D input, got {len(pad)}")
    pairs = [pad[i:i + 2] for i in range(0, len(pad), 2)]
    if not (len(pad) == 2 * rank and pad_from_left_axis):
        pairs = ([[0, 0]] * (rank - len(pairs)) + pairs[::-1])    # listed from the last dim
    flat = [p for pair in pairs for p in pair]
    return apply_op_single("pad", {"X": x}, {"paddings": flat, "pad_value": float(value)}, name_key=_key("pad", name))


def zeropad2d(x, padding, data_format="NCHW", name=None):
    """Zero padding of H, W: ``padding`` = [left, right, top, bottom] (or one int for all)."""
    padding = _int_list(padding, "zeropad2d()")
    return pad(x, padding * 4 if len(padding) == 1 else padding, "constant", 0.0, data_format, name=name)


# --- interpolate -----------------------------------------------------------------------------------
_INTERP_FORMATS = {3: ("NCW", "NWC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}
_INTERP_RANKS = {"nearest": (3, 4, 5), "linear": (3,), "bilinear": (4,), "trilinear": (5,)}


def _per_axis(value, k, what):
    values = list(value) if isinstance(value, (list, tuple)) else [value] * k
    if len(values) != k:
        raise located(AttrError, f"interpolate(): {what} must be a number or {k} numbers for a {k + 2}-D input, "
                                 f"got {value!r}")
    return values


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format=None, name=None):
    """Resize the spatial dims of ``x`` to ``size`` or by ``scale_factor``: ``mode`` nearest (3-D,
    4-D, 5-D), linear (3-D), bilinear (4-D) or trilinear (5-D)."""
    mode = mode.lower() if isinstance(mode, str) else mode
    if mode not in _INTERP_RANKS:
        raise NotImplementedError(f"interpolate(): mode {mode!r} is not supported yet (supported: 'nearest', "
                                  "'linear', 'bilinear', 'trilinear')")
    rank = len(x.shape)
    if rank not in _INTERP_RANKS[mode]:
        raise located(ShapeError, f"interpolate(): mode {mode!r} needs a {' or '.join(f'{r}-D' for r in _INTERP_RANKS[mode])} "
                                  f"input, got {fmt_shape(x.shape)}")
    if (size is None) == (scale_factor is None):
        raise located(AttrError, "interpolate(): give exactly one of size and scale_factor")
    if align_mode not in (0, 1):
        raise located(AttrError, f"interpolate(): align_mode must be 0 or 1, got {align_mode!r}")
    data_format = data_format or _INTERP_FORMATS[rank][0]
    if data_format not in _INTERP_FORMATS[rank]:
        raise located(AttrError, f"interpolate(): data_format for a {rank}-D input must be one of "
                                 f"{_INTERP_FORMATS[rank]}, got {data_format!r}")
    attrs = {"interp_method": mode, "align_corners": bool(align_corners), "align_mode": int(align_mode),
             "data_layout": "NHWC" if data_format[-1] == "C" else "NCHW", "out_d": -1, "out_h": -1, "out_w": -1,
             "scale": []}
    k = rank - 2
    if size is not None:
        for key, value in zip(("out_d", "out_h", "out_w")[3 - k:], _per_axis(size, k, "size")):
            attrs[key] = int(value)
    else:
        scale = [float(v) for v in _per_axis(scale_factor, k, "scale_factor")]
        if any(sc <= 0 for sc in scale):
            raise located(AttrError, f"interpolate(): scale_factor must be > 0, got {scale_factor!r}")
        attrs["scale"] = scale
    op = f"{mode}_interp_v2"
    return apply_op_single(op, {"X": x}, attrs, name_key=_key(op, name))


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
             data_format=None, name=None):
    """The reference's alias of ``interpolate``."""
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format, name)


# --- layers ----------------------------------------------------------------------------------------
def _pad_layer(class_name, rank, mode=None, zero=False):
    k = rank - 2                                            # spatial dims

    def __init__(self, padding, *args, **kwargs):
        Layer.__init__(self)
        names = (["data_format", "name"] if zero or mode not in (None, "constant") else
                 ["value", "data_format", "name"] if mode == "constant" else ["mode", "value", "data_format", "name"])
        params = dict(zip(names, args))
        params.update(kwargs)
        unknown = set(params) - set(names)
        if unknown:
            raise located(ArgTypeError, f"{class_name}() got unexpected arguments {sorted(unknown)}; it takes padding, {names}")
        padding = _int_list(padding, class_name)
        self._pad = padding * (2 * k) if len(padding) == 1 else padding
        self._mode = params.get("mode", mode or "constant")
        self._value = 0.0 if zero else float(params.get("value", 0.0))
        self._data_format = params.get("data_format", _FORMATS[rank][0])
        self._name = params.get("name")

    def forward(self, x):
        return pad(x, self._pad, self._mode, self._value, self._data_format, name=self._name)

    return type(class_name, (Layer,), {"__init__": __init__, "forward": forward,
                                       "__doc__": f"Layer form of ``F.pad`` for {rank}-D inputs ({class_name})."})


_PAD_LAYERS = {}
for _rank in (3, 4, 5):
    _d = f"{_rank - 2}D"
    _PAD_LAYERS[f"Pad{_d}"] = _pad_layer(f"Pad{_d}", _rank)
    _PAD_LAYERS[f"ZeroPad{_d}"] = _pad_layer(f"ZeroPad{_d}", _rank, "constant", zero=True)
    for _prefix, _mode in (("Constant", "constant"), ("Reflection", "reflect"), ("Replication", "replicate"),
                           ("Circular", "circular")):
        _PAD_LAYERS[f"{_prefix}Pad{_d}"] = _pad_layer(f"{_prefix}Pad{_d}", _rank, _mode)
        _PAD_LAYERS[f"{_prefix}Pad{_d[0]}d"] = _PAD_LAYERS[f"{_prefix}Pad{_d}"]
globals().update(_PAD_LAYERS)


class Upsample(Layer):
    """``Upsample(size=None, scale_factor=None, mode='nearest', align_corners=False, align_mode=0,
    data_format=None, name=None)``: ``F.interpolate`` as a layer."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                 data_format=None, name=None):
        super().__init__()
        self._args = (size, scale_factor, mode, align_corners, align_mode, data_format, name)

    def forward(self, x):
        return interpolate(x, *self._args)


class UpsamplingNearest2D(Upsample):
    """Nearest upsampling of a 4-D input."""

    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "nearest", False, 0, data_format, name)


class UpsamplingBilinear2D(Upsample):
    """Bilinear upsampling of a 4-D input with ``align_corners=True``, as the reference."""

    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format, name)


__all__ = sorted(_PAD_LAYERS) + ["Upsample", "UpsamplingBilinear2D", "UpsamplingNearest2D"]
