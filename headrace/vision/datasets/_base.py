"""What the vision datasets share: mode and backend checks, and how a sample image is returned."""
from __future__ import annotations

import numpy as np

from ...io.dataset import Dataset
from ..image import get_image_backend, require_pil


class ImageDataset(Dataset):
    """A map-style dataset of (image, label) with the reference's ``mode``/``transform``/``backend``."""

    def _setup(self, mode, transform, backend):
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError(f"mode should be 'train' or 'test', but got {mode}")
        self.mode = mode.lower()
        backend = get_image_backend() if backend is None else backend
        if backend not in ("pil", "cv2"):
            raise ValueError(f"Expected backend are one of ['pil', 'cv2'], but got {backend}")
        if backend == "pil":
            require_pil(f"{type(self).__name__}(backend='pil') (the default image backend)")
        self.backend = backend
        self.transform = transform
        from ...nn.tensor_misc import get_default_dtype

        self.dtype = get_default_dtype()

    def _finish(self, image: np.ndarray, label: np.ndarray):
        """PIL image (uint8 array as 'L' or 'RGB') or the array; the transform; the cv2 cast."""
        if self.backend == "pil":
            image = require_pil().fromarray(image.astype(np.uint8))
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == "pil":
            return image, label
        return image.astype(self.dtype), label
