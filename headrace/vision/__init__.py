"""``paddle.vision``: datasets (MNIST, FashionMNIST, Cifar10, Cifar100), transforms, image backends;
``models`` is filled by the vision-models work."""
from . import datasets, transforms  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401

__all__ = ["datasets", "transforms", "get_image_backend", "image_load", "set_image_backend"]
