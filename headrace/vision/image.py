"""``paddle.vision`` image backends: ``'pil'`` (the default: datasets return ``PIL.Image`` images)
or ``'cv2'`` (datasets return NumPy arrays; OpenCV itself is not needed for that).

Pillow is an optional dependency (``pip install headrace[image]``): code that needs it imports it
through ``require_pil``, which says how to install it if it is missing.  OpenCV is not supported:
``image_load(..., backend='cv2')`` raises ``NotImplementedError``.
"""
from __future__ import annotations

_BACKENDS = ("pil", "cv2")
_state = {"backend": "pil"}


def require_pil(what: str = "this"):
    """The ``PIL.Image`` module, or an ``ImportError`` saying that ``what`` needs Pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{what} needs Pillow (PIL images), which is not installed: "
                          "pip install 'headrace[image]' (or pip install 'Pillow>=10')") from None
    return Image


def is_pil_image(img) -> bool:
    """True for a ``PIL.Image.Image`` (False, without importing Pillow, if Pillow was never imported)."""
    import sys

    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(img, module.Image)


def set_image_backend(backend):
    """Choose the image type the vision datasets return: ``'pil'`` or ``'cv2'`` (NumPy arrays)."""
    if backend not in _BACKENDS:
        raise ValueError(f"Expected backend are one of ['pil', 'cv2'], but got {backend}")
    _state["backend"] = backend


def get_image_backend():
    """The current image backend: ``'pil'`` (default) or ``'cv2'``."""
    return _state["backend"]


def image_load(path, backend=None):
    """Load an image file: a ``PIL.Image`` with the 'pil' backend.  The 'cv2' backend (OpenCV's
    ``imread``, BGR arrays) is not supported by headrace."""
    backend = get_image_backend() if backend is None else backend
    if backend not in _BACKENDS:
        raise ValueError(f"Expected backend are one of ['pil', 'cv2'], but got {backend}")
    if backend == "cv2":
        raise NotImplementedError("image_load(backend='cv2') needs OpenCV, which headrace does not support; "
                                  "use backend='pil' (np.asarray(img) gives an RGB array)")
    return require_pil("image_load").open(path)
