"""``paddle.vision.datasets``: MNIST, FashionMNIST, Cifar10, Cifar100 over the real file formats."""
from .cifar import Cifar10, Cifar100
from .mnist import MNIST, FashionMNIST

__all__ = ["Cifar10", "Cifar100", "FashionMNIST", "MNIST"]
