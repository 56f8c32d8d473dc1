"""VGG 11/13/16/19 (optionally with batch norm), as the reference's ``paddle.vision.models``."""
from ... import nn
from ...nn.tensor import flatten
from ._utils import no_pretrained

# 'M' is a 2x2 max pool; a number is a 3x3 conv (padding 1) with that many output channels
cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Layer):
    """VGG on a ``features`` stack (see ``make_layers``): then adaptive average pooling to 7x7
    (``with_pool``) and the classifier Linear(25088, 4096)-ReLU-Dropout-Linear(4096, 4096)-ReLU-
    Dropout-Linear(4096, ``num_classes``) (none when ``num_classes <= 0``)."""

    def __init__(self, features, num_classes=1000, with_pool=True):
        super().__init__()
        self.features = features
        self.num_classes = num_classes
        self.with_pool = with_pool
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((7, 7))
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(),
                nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(),
                nn.Linear(4096, num_classes))

    def forward(self, x):
        """[N, 3, H, W] images -> [N, num_classes] logits."""
        x = self.features(x)
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.classifier(flatten(x, 1))
        return x


def make_layers(cfg, batch_norm=False):
    """The conv stack of a VGG config list (3 input channels); BatchNorm2D after each conv if asked."""
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2D(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2D(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2D(v))
        layers.append(nn.ReLU())
        in_channels = v
    return nn.Sequential(*layers)


def _vgg(arch, cfg, batch_norm, pretrained, **kwargs):
    no_pretrained(arch + ("_bn" if batch_norm else ""), pretrained)
    return VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)


def vgg11(pretrained=False, batch_norm=False, **kwargs):
    """VGG-11 (config A); keyword arguments go to ``VGG``."""
    return _vgg("vgg11", "A", batch_norm, pretrained, **kwargs)


def vgg13(pretrained=False, batch_norm=False, **kwargs):
    """VGG-13 (config B)."""
    return _vgg("vgg13", "B", batch_norm, pretrained, **kwargs)


def vgg16(pretrained=False, batch_norm=False, **kwargs):
    """VGG-16 (config D): 138,357,544 parameters with 1000 classes and no batch norm."""
    return _vgg("vgg16", "D", batch_norm, pretrained, **kwargs)


def vgg19(pretrained=False, batch_norm=False, **kwargs):
    """VGG-19 (config E)."""
    return _vgg("vgg19", "E", batch_norm, pretrained, **kwargs)
