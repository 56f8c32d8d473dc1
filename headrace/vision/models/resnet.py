"""ResNet 18/34/50/101/152 (and the wide / ResNeXt variants), as the reference's
``paddle.vision.models``: BasicBlock (two 3x3 convs) and BottleneckBlock (1x1, 3x3, 1x1 with 4x
expansion), batch norm after every conv, convs without bias."""
from ... import nn
from ...nn.tensor import flatten
from ._utils import no_pretrained


class BasicBlock(nn.Layer):
    """Two 3x3 conv + BatchNorm2D with a residual connection (``downsample`` maps the input when
    the shape changes)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = nn.Conv2D(inplanes, planes, 3, padding=1, stride=stride, bias_attr=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(planes, planes, 3, padding=1, bias_attr=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class BottleneckBlock(nn.Layer):
    """1x1 (width) - 3x3 (width, stride, groups) - 1x1 (4 x planes) convs, each with BatchNorm2D,
    and a residual connection; width = int(planes * base_width / 64) * groups."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2D
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2D(inplanes, width, 1, bias_attr=False)
        self.bn1 = norm_layer(width)
        self.conv2 = nn.Conv2D(width, width, 3, padding=dilation, stride=stride, groups=groups, dilation=dilation,
                               bias_attr=False)
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2D(width, planes * self.expansion, 1, bias_attr=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU()
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


_LAYERS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class ResNet(nn.Layer):
    """ResNet: 7x7/2 conv (64) + BN + ReLU + 3x3/2 max pool, four stages of ``block`` (64, 128,
    256, 512 planes; the last three stride 2), adaptive average pool to 1x1 (``with_pool``) and
    Linear(512 * expansion, ``num_classes``) (none when ``num_classes <= 0``).  ``depth`` picks the
    blocks per stage (18, 34, 50, 101 or 152); ``width`` and ``groups`` give wide/ResNeXt nets."""

    def __init__(self, block, depth=50, width=64, num_classes=1000, with_pool=True, groups=1):
        super().__init__()
        if depth not in _LAYERS:
            raise ValueError(f"ResNet: depth must be one of {sorted(_LAYERS)}, got {depth!r}")
        layers = _LAYERS[depth]
        self.groups, self.base_width = groups, width
        self.num_classes, self.with_pool = num_classes, with_pool
        self._norm_layer = nn.BatchNorm2D
        self.inplanes, self.dilation = 64, 1
        self.conv1 = nn.Conv2D(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias_attr=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D((1, 1))
        if num_classes > 0:
            self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer, downsample, previous_dilation = self._norm_layer, None, self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2D(self.inplanes, planes * block.expansion, 1, stride=stride, bias_attr=False),
                norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        """[N, 3, H, W] images -> [N, num_classes] logits."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = self.fc(flatten(x, 1))
        return x


def _resnet(arch, block, depth, pretrained, **kwargs):
    no_pretrained(arch, pretrained)
    return ResNet(block, depth, **kwargs)


def resnet18(pretrained=False, **kwargs):
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]); keyword arguments go to ``ResNet``."""
    return _resnet("resnet18", BasicBlock, 18, pretrained, **kwargs)


def resnet34(pretrained=False, **kwargs):
    """ResNet-34 (BasicBlock, [3, 4, 6, 3])."""
    return _resnet("resnet34", BasicBlock, 34, pretrained, **kwargs)


def resnet50(pretrained=False, **kwargs):
    """ResNet-50 (BottleneckBlock, [3, 4, 6, 3])."""
    return _resnet("resnet50", BottleneckBlock, 50, pretrained, **kwargs)


def resnet101(pretrained=False, **kwargs):
    """ResNet-101 (BottleneckBlock, [3, 4, 23, 3])."""
    return _resnet("resnet101", BottleneckBlock, 101, pretrained, **kwargs)


def resnet152(pretrained=False, **kwargs):
    """ResNet-152 (BottleneckBlock, [3, 8, 36, 3])."""
    return _resnet("resnet152", BottleneckBlock, 152, pretrained, **kwargs)


def wide_resnet50_2(pretrained=False, **kwargs):
    """Wide ResNet-50-2: ResNet-50 with bottleneck width 128."""
    return _resnet("wide_resnet50_2", BottleneckBlock, 50, pretrained, **{**kwargs, "width": 64 * 2})


def wide_resnet101_2(pretrained=False, **kwargs):
    """Wide ResNet-101-2: ResNet-101 with bottleneck width 128."""
    return _resnet("wide_resnet101_2", BottleneckBlock, 101, pretrained, **{**kwargs, "width": 64 * 2})


def resnext50_32x4d(pretrained=False, **kwargs):
    """ResNeXt-50 32x4d: 32 groups of width 4."""
    return _resnet("resnext50_32x4d", BottleneckBlock, 50, pretrained, **{**kwargs, "groups": 32, "width": 4})


def resnext101_64x4d(pretrained=False, **kwargs):
    """ResNeXt-101 64x4d: 64 groups of width 4."""
    return _resnet("resnext101_64x4d", BottleneckBlock, 101, pretrained, **{**kwargs, "groups": 64, "width": 4})
