"""``paddle.vision.transforms.functional``: image operations on PIL images, NumPy arrays (HWC or HW)
and eager ``Tensor`` images (CHW), with the reference's semantics.

PIL images are processed by Pillow (optional dependency, imported lazily).  NumPy arrays are
processed by our own NumPy code where the reference calls OpenCV: ``resize`` ('bilinear' with
OpenCV's half-pixel-centre sampling and edge clamping, no antialiasing; 'nearest' with
``floor(dst * in / out)``), ``pad`` (``np.pad``: 'reflect' is OpenCV's BORDER_REFLECT_101,
'symmetric' its BORDER_REFLECT), flips and crops by slicing.  A uint8 result of bilinear resizing is
rounded to nearest (OpenCV's fixed-point arithmetic can differ by one level).  Other
interpolations ('bicubic', 'area', 'lanczos') on NumPy arrays raise ``NotImplementedError``:
use a PIL image for them.

``to_tensor`` returns an eager ``Tensor`` in dynamic mode, as the reference; in static mode (where a
sample is fed to the executor, not computed) it returns the float32 NumPy array.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ..image import is_pil_image, require_pil

__all__ = ["center_crop", "crop", "hflip", "normalize", "pad", "resize", "to_tensor", "vflip"]

_PIL_INTERP = {"nearest": "NEAREST", "bilinear": "BILINEAR", "bicubic": "BICUBIC", "box": "BOX",
               "lanczos": "LANCZOS", "hamming": "HAMMING"}


def _tensor_type():
    from ...eager.tensor import Tensor

    return Tensor


def _is_tensor_image(img) -> bool:
    return isinstance(img, _tensor_type())


def _is_numpy_image(img) -> bool:
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


_is_pil_image = is_pil_image   # the reference's helper names, used by custom transforms in its examples


def _check_image(img, what: str):
    if not (is_pil_image(img) or _is_numpy_image(img) or _is_tensor_image(img)):
        raise TypeError(f"{what}: img should be PIL Image, Tensor image (CHW) or ndarray with ndim 2 or 3 "
                        f"(HW or HWC), got {type(img).__name__}"
                        + (f" with ndim {img.ndim}" if isinstance(img, np.ndarray) else ""))


def _wrap(array):
    """An eager Tensor of ``array`` in dynamic mode, the array itself in static mode."""
    from ...core import context

    return array if context.in_static_mode() else _tensor_type()(np.ascontiguousarray(array))


def _tensor_op(img, fn):
    """Apply ``fn`` (on a CHW NumPy array) to a Tensor image, returning a Tensor."""
    return _tensor_type()(np.ascontiguousarray(fn(img.numpy())))


def _pil_array(pic):
    if pic.mode == "I":
        return np.array(pic, np.int32)
    if pic.mode == "I;16":
        return np.array(pic, np.int16)
    if pic.mode == "F":
        return np.array(pic, np.float32)
    if pic.mode == "1":
        return 255 * np.array(pic, np.uint8)
    return np.array(pic)


def to_tensor(pic, data_format="CHW"):
    """A PIL image or HWC/HW array as an image Tensor (CHW by default): uint8 values (and PIL modes
    holding bytes) are scaled to float32 in [0, 1], other dtypes are kept as they are."""
    _check_image(pic, "to_tensor")
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"data_format should be CHW or HWC. Got {data_format}")
    if _is_tensor_image(pic):
        return pic if data_format == "CHW" else pic.transpose([1, 2, 0])
    if is_pil_image(pic):
        channels = 3 if pic.mode == "YCbCr" else 1 if pic.mode == "I;16" else len(pic.mode)
        array = _pil_array(pic).reshape(pic.size[1], pic.size[0], channels)
    else:
        array = pic[:, :, None] if pic.ndim == 2 else pic
    if array.dtype == np.uint8:
        array = array.astype(np.float32) / 255.0
    if data_format == "CHW":
        array = array.transpose(2, 0, 1)
    return _wrap(array)


def normalize(img, mean, std, data_format="CHW", to_rgb=False):
    """``(img - mean) / std`` per channel (channel axis first for 'CHW', last for 'HWC').  A PIL image
    becomes a float32 array first; ``to_rgb`` reverses the last axis of an array (BGR to RGB) and is
    ignored for Tensors, as the reference."""
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"data_format should be CHW or HWC. Got {data_format}")
    shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
    mean = np.float32(np.array(mean).reshape(shape))
    std = np.float32(np.array(std).reshape(shape))
    if _is_tensor_image(img):
        return _tensor_op(img, lambda a: (a - mean) / std)
    if is_pil_image(img):
        img = np.array(img).astype(np.float32)
    if not isinstance(img, np.ndarray):
        raise TypeError(f"normalize: img should be PIL Image, Tensor or ndarray, got {type(img).__name__}")
    if to_rgb:
        img = img[..., ::-1]
    return (img - mean) / std


def _target_size(h: int, w: int, size):
    """(out_h, out_w) as the reference: an int is the shorter side (the other side scaled, truncated)."""
    if isinstance(size, numbers.Integral):
        if (w <= h and w == size) or (h <= w and h == size):
            return h, w
        if w < h:
            return int(size * h / w), int(size)
        return int(size), int(size * w / h)
    return int(size[0]), int(size[1])


def _check_size(size):
    if not (isinstance(size, numbers.Integral) or (isinstance(size, Sequence) and len(size) == 2)):
        raise TypeError(f"Got inappropriate size arg: {size} (an int or a (height, width) pair)")
    if any(int(s) <= 0 for s in ([size] if isinstance(size, numbers.Integral) else size)):
        raise ValueError(f"resize: size must be positive, got {size}")


def _linear_axis(n_in: int, n_out: int):
    """Source indices (i0, i1) and weights of i1 along one axis, OpenCV INTER_LINEAR style."""
    pos = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    pos = np.clip(pos, 0, n_in - 1)
    i0 = np.floor(pos).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, pos - i0


def _resize_array(img, out_h: int, out_w: int, interpolation: str):
    h, w = img.shape[:2]
    if interpolation == "nearest":
        rows = np.minimum(np.floor(np.arange(out_h) * (h / out_h)).astype(np.int64), h - 1)
        cols = np.minimum(np.floor(np.arange(out_w) * (w / out_w)).astype(np.int64), w - 1)
        return img[rows][:, cols]
    if interpolation != "bilinear":
        raise NotImplementedError(f"resize: interpolation {interpolation!r} on NumPy arrays is not supported "
                                  "(the reference uses OpenCV); 'bilinear' and 'nearest' are, or pass a PIL image")
    r0, r1, fy = _linear_axis(h, out_h)
    c0, c1, fx = _linear_axis(w, out_w)
    x = img.astype(np.float64)
    fx = fx.reshape((1, -1) + (1,) * (img.ndim - 2))
    fy = fy.reshape((-1, 1) + (1,) * (img.ndim - 2))
    top = x[r0][:, c0] * (1 - fx) + x[r0][:, c1] * fx
    bottom = x[r1][:, c0] * (1 - fx) + x[r1][:, c1] * fx
    out = top * (1 - fy) + bottom * fy
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(img.dtype)


def resize(img, size, interpolation="bilinear"):
    """Resize to ``size``: (height, width), or an int for the shorter side (aspect ratio kept)."""
    _check_image(img, "resize")
    _check_size(size)
    if is_pil_image(img):
        Image = require_pil("resize of a PIL image")
        if interpolation not in _PIL_INTERP:
            raise ValueError(f"resize: interpolation should be one of {sorted(_PIL_INTERP)}, got {interpolation!r}")
        out_h, out_w = _target_size(img.size[1], img.size[0], size)
        if (out_h, out_w) == (img.size[1], img.size[0]) and isinstance(size, numbers.Integral):
            return img
        return img.resize((out_w, out_h), getattr(Image.Resampling, _PIL_INTERP[interpolation]))
    if _is_tensor_image(img):
        def chw(a):
            out_h, out_w = _target_size(a.shape[1], a.shape[2], size)
            return _resize_array(a.transpose(1, 2, 0), out_h, out_w, interpolation).transpose(2, 0, 1)
        return _tensor_op(img, chw)
    out_h, out_w = _target_size(img.shape[0], img.shape[1], size)
    if (out_h, out_w) == img.shape[:2]:
        return img
    return _resize_array(img, out_h, out_w, interpolation)


def crop(img, top, left, height, width):
    """The ``height`` x ``width`` box whose top-left corner is (``top``, ``left``)."""
    _check_image(img, "crop")
    if is_pil_image(img):
        return img.crop((left, top, left + width, top + height))
    if _is_tensor_image(img):
        return _tensor_op(img, lambda a: a[..., top:top + height, left:left + width])
    return img[top:top + height, left:left + width]


def _image_hw(img):
    if is_pil_image(img):
        return img.size[1], img.size[0]
    if _is_tensor_image(img):
        return tuple(img.shape[-2:])
    return img.shape[:2]


def center_crop(img, output_size):
    """The centred crop of ``output_size`` ((height, width) or an int for a square)."""
    _check_image(img, "center_crop")
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    h, w = _image_hw(img)
    th, tw = output_size
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def hflip(img):
    """Flip left-right."""
    _check_image(img, "hflip")
    if is_pil_image(img):
        return img.transpose(require_pil().Transpose.FLIP_LEFT_RIGHT)
    if _is_tensor_image(img):
        return _tensor_op(img, lambda a: a[..., ::-1])
    return np.ascontiguousarray(img[:, ::-1])


def vflip(img):
    """Flip top-bottom."""
    _check_image(img, "vflip")
    if is_pil_image(img):
        return img.transpose(require_pil().Transpose.FLIP_TOP_BOTTOM)
    if _is_tensor_image(img):
        return _tensor_op(img, lambda a: a[..., ::-1, :])
    return np.ascontiguousarray(img[::-1])


_NP_PAD = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def _pad_widths(padding):
    if not isinstance(padding, (numbers.Integral, list, tuple)):
        raise TypeError(f"Got inappropriate padding arg: {padding!r}")
    if isinstance(padding, numbers.Integral):
        return padding, padding, padding, padding
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return tuple(padding)
    raise ValueError(f"Padding must be an int or a 2, or 4 element tuple, not a {len(padding)} element tuple")


def _pad_array(img, left, top, right, bottom, fill, mode):
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    if mode != "constant":
        return np.pad(img, widths, mode=_NP_PAD[mode])
    if isinstance(fill, (list, tuple)) and img.ndim == 3:
        if len(fill) != img.shape[2]:
            raise ValueError(f"pad: fill has {len(fill)} values for an image of {img.shape[2]} channels")
        return np.stack([np.pad(img[..., c], widths[:2], constant_values=fill[c]) for c in range(img.shape[2])], -1)
    return np.pad(img, widths, constant_values=fill)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad the borders: ``padding`` an int (all sides), (left/right, top/bottom) or (left, top, right,
    bottom); ``padding_mode`` 'constant' (``fill``, per channel if a tuple), 'edge', 'reflect'
    (mirror without the edge value) or 'symmetric' (mirror with it)."""
    _check_image(img, "pad")
    if not isinstance(fill, (numbers.Number, str, list, tuple)):
        raise TypeError(f"Got inappropriate fill arg: {fill!r} (a number or a per-channel tuple)")
    if not isinstance(padding_mode, str):
        raise TypeError(f"Got inappropriate padding_mode arg: {padding_mode!r}")
    if padding_mode not in _NP_PAD:
        raise ValueError(f"Padding mode should be either constant, edge, reflect or symmetric, got {padding_mode!r}")
    left, top, right, bottom = _pad_widths(padding)
    if is_pil_image(img):
        Image = require_pil("pad of a PIL image")
        if padding_mode == "constant":
            from PIL import ImageOps

            return ImageOps.expand(img, border=(left, top, right, bottom), fill=fill)
        return Image.fromarray(_pad_array(np.asarray(img), left, top, right, bottom, fill, padding_mode))
    if _is_tensor_image(img):
        return _tensor_op(img, lambda a: _pad_array(a.transpose(1, 2, 0), left, top, right, bottom, fill,
                                                    padding_mode).transpose(2, 0, 1))
    return _pad_array(img, left, top, right, bottom, fill, padding_mode)
