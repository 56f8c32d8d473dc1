"""``paddle.vision.transforms`` classes: callables applied to a sample image (PIL image, HWC/HW
NumPy array or CHW Tensor), with the reference's ``BaseTransform`` protocol (``keys`` name the
parts of a tuple input; ``_apply_<key>`` transforms each).

Randomness: as the reference, the random transforms draw from Python's global ``random`` module
(``random.random()``, ``random.randint``), so ``random.seed(n)`` makes them reproducible;
``paddle.seed`` does not affect them (it does not in the reference either).
"""
from __future__ import annotations

import numbers
import random
from collections.abc import Sequence

import numpy as np

from . import functional as F
from ..image import is_pil_image

__all__ = ["BaseTransform", "CenterCrop", "Compose", "Normalize", "Pad", "RandomCrop", "RandomHorizontalFlip",
           "RandomVerticalFlip", "Resize", "ToTensor", "Transpose"]


def _get_image_size(img):
    """(width, height) of a PIL image, an HWC/HW array or a CHW Tensor."""
    if is_pil_image(img):
        return img.size
    if F._is_numpy_image(img):
        return img.shape[:2][::-1]
    if F._is_tensor_image(img):
        return tuple(img.shape[-2:][::-1])
    raise TypeError(f"Unexpected image type {type(img).__name__}")


class Compose:
    """Apply ``transforms`` in order.  An error names the transform that failed (as a note on the
    original exception, which is re-raised)."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, data):
        for f in self.transforms:
            try:
                data = f(data)
            except Exception as exc:
                exc.add_note(f"while applying transform {f!r} in {type(self).__name__}")
                raise
        return data

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class BaseTransform:
    """Base of the vision transforms.  ``keys`` (default ``("image",)``) names the parts of a tuple
    input; ``__call__`` computes ``self.params = self._get_params(inputs)`` once, then applies
    ``_apply_<key>`` to each part (parts beyond ``keys`` pass through)."""

    def __init__(self, keys=None):
        if keys is None:
            keys = ("image",)
        elif not isinstance(keys, Sequence):
            raise ValueError(f"keys should be a sequence, but got keys={keys}")
        for k in keys:
            if self._get_apply(k) is None:
                raise NotImplementedError(f"{k} is unsupported data structure")
        self.keys = keys
        self.params = None

    def _get_params(self, inputs):
        return None

    def __call__(self, inputs):
        if not isinstance(inputs, tuple):
            inputs = (inputs,)
        self.params = self._get_params(inputs)
        outputs = [self._get_apply(k)(x) for k, x in zip(self.keys, inputs)]
        outputs.extend(inputs[len(self.keys):])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _get_apply(self, key):
        return getattr(self, f"_apply_{key}", None)

    def _apply_image(self, image):
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_image")

    def __repr__(self):
        return f"{type(self).__name__}()"


class ToTensor(BaseTransform):
    """PIL image or HWC array to a CHW (or HWC) float32 Tensor in [0, 1] (see ``functional.to_tensor``)."""

    def __init__(self, data_format="CHW", keys=None):
        super().__init__(keys)
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Resize(BaseTransform):
    """Resize to ``size`` ((h, w), or an int for the shorter side) with ``interpolation``."""

    def __init__(self, size, interpolation="bilinear", keys=None):
        super().__init__(keys)
        F._check_size(size)
        self.size = size
        self.interpolation = interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)


class CenterCrop(BaseTransform):
    """Crop the centre ``size`` ((h, w) or an int) of the image."""

    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = (int(size), int(size)) if isinstance(size, numbers.Number) else size

    def _apply_image(self, img):
        return F.center_crop(img, self.size)


class _RandomFlip(BaseTransform):
    _flip = None

    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError(f"probability must be between 0 and 1, got {prob}")
        self.prob = prob

    def _apply_image(self, img):
        if random.random() < self.prob:
            return type(self)._flip(img)
        return img


class RandomHorizontalFlip(_RandomFlip):
    """Flip left-right with probability ``prob`` (draws ``random.random()``)."""

    _flip = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    """Flip top-bottom with probability ``prob`` (draws ``random.random()``)."""

    _flip = staticmethod(F.vflip)


class Normalize(BaseTransform):
    """``(img - mean) / std`` per channel; a number for ``mean``/``std`` means the same for 3 channels."""

    def __init__(self, mean=0.0, std=1.0, data_format="CHW", to_rgb=False, keys=None):
        super().__init__(keys)
        self.mean = [mean] * 3 if isinstance(mean, numbers.Number) else mean
        self.std = [std] * 3 if isinstance(std, numbers.Number) else std
        self.data_format = data_format
        self.to_rgb = to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Transpose(BaseTransform):
    """Permute the axes of an HWC image (default to CHW); a PIL image becomes an array, an HW array gets
    a channel axis first."""

    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = order

    def _apply_image(self, img):
        if F._is_tensor_image(img):
            return img.transpose(list(self.order))
        if is_pil_image(img):
            img = np.asarray(img)
        if img.ndim == 2:
            img = img[..., np.newaxis]
        return img.transpose(self.order)


class Pad(BaseTransform):
    """Pad the borders (see ``functional.pad``)."""

    def __init__(self, padding, fill=0, padding_mode="constant", keys=None):
        F._pad_widths(padding)
        super().__init__(keys)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(BaseTransform):
    """Crop a random ``size`` box, after optional ``padding``; with ``pad_if_needed`` an image smaller
    than ``size`` is padded first.  The corner is drawn with ``random.randint`` (top, then left)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant", keys=None):
        super().__init__(keys)
        self.size = (int(size), int(size)) if isinstance(size, numbers.Number) else tuple(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def _get_param(self, img, output_size):
        w, h = _get_image_size(img)
        th, tw = output_size
        if w == tw and h == th:
            return 0, 0, h, w
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop size {th}x{tw} (h x w) is larger than the image {h}x{w}; "
                             "pass padding=... or pad_if_needed=True")
        return random.randint(0, h - th), random.randint(0, w - tw), th, tw

    def _apply_image(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        w, h = _get_image_size(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, (self.size[1] - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, (0, self.size[0] - h), self.fill, self.padding_mode)
        return F.crop(img, *self._get_param(img, self.size))
