"""``paddle.vision.models``: LeNet, VGG, ResNet and MobileNetV1/V2 as the reference builds them
(no pretrained weights: ``pretrained=True`` raises)."""
from .lenet import LeNet
from .mobilenet import MobileNetV1, MobileNetV2, mobilenet_v1, mobilenet_v2
from .resnet import (BasicBlock, BottleneckBlock, ResNet, resnet18, resnet34, resnet50, resnet101, resnet152,
                     resnext50_32x4d, resnext101_64x4d, wide_resnet50_2, wide_resnet101_2)
from .vgg import VGG, vgg11, vgg13, vgg16, vgg19

__all__ = ["BasicBlock", "BottleneckBlock", "LeNet", "MobileNetV1", "MobileNetV2", "ResNet", "VGG", "mobilenet_v1",
           "mobilenet_v2", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
           "resnext101_64x4d", "vgg11", "vgg13", "vgg16", "vgg19", "wide_resnet50_2", "wide_resnet101_2"]
