"""``paddle.vision``: datasets (MNIST, FashionMNIST, Cifar10, Cifar100), transforms, image backends
and the model zoo (``paddle.vision.models``; its names are also here, as the reference)."""
from . import datasets, models, transforms  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401
from .models import *  # noqa: F401,F403
