"""``paddle.vision.transforms``: image transforms (classes) and their functional forms."""
from . import functional  # noqa: F401
from .functional import center_crop, crop, hflip, normalize, pad, resize, to_tensor, vflip  # noqa: F401
from .transforms import (BaseTransform, CenterCrop, Compose, Normalize, Pad, RandomCrop,  # noqa: F401
                         RandomHorizontalFlip, RandomVerticalFlip, Resize, ToTensor, Transpose)

__all__ = ["BaseTransform", "CenterCrop", "Compose", "Normalize", "Pad", "RandomCrop", "RandomHorizontalFlip",
           "RandomVerticalFlip", "Resize", "ToTensor", "Transpose", "center_crop", "crop", "functional",
           "hflip", "normalize", "pad", "resize", "to_tensor", "vflip"]
