"""MobileNetV1 and MobileNetV2, as the reference's ``paddle.vision.models`` builds them
(depthwise-separable convs; V2's inverted residuals with ReLU6 and channel counts rounded to 8)."""
from ... import nn
from ...nn.tensor import flatten
from ._utils import no_pretrained


class ConvBNLayer(nn.Layer):
    """Conv2D (no bias) + BatchNorm2D + ReLU (MobileNetV1's unit)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, num_groups=1):
        super().__init__()
        self._conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                               groups=num_groups, bias_attr=False)
        self._norm_layer = nn.BatchNorm2D(out_channels)
        self._act = nn.ReLU()

    def forward(self, x):
        return self._act(self._norm_layer(self._conv(x)))


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise ConvBNLayer then a 1x1 pointwise ConvBNLayer (channels scaled by ``scale``)."""

    def __init__(self, in_channels, out_channels1, out_channels2, num_groups, stride, scale):
        super().__init__()
        self._depthwise_conv = ConvBNLayer(in_channels, int(out_channels1 * scale), kernel_size=3, stride=stride,
                                           padding=1, num_groups=int(num_groups * scale))
        self._pointwise_conv = ConvBNLayer(int(out_channels1 * scale), int(out_channels2 * scale), kernel_size=1,
                                           stride=1, padding=0)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


# (in, out1, out2, groups, stride) of MobileNetV1's 13 depthwise-separable blocks, channels before scaling
_V1_BLOCKS = ([(32, 32, 64, 32, 1), (64, 64, 128, 64, 2), (128, 128, 128, 128, 1), (128, 128, 256, 128, 2),
               (256, 256, 256, 256, 1), (256, 256, 512, 256, 2)] + [(512, 512, 512, 512, 1)] * 5
              + [(512, 512, 1024, 512, 2), (1024, 1024, 1024, 1024, 1)])
_V1_NAMES = ["conv2_1", "conv2_2", "conv3_1", "conv3_2", "conv4_1", "conv4_2"] + [f"conv5_{i}" for i in range(1, 7)] + ["conv6"]


class MobileNetV1(nn.Layer):
    """MobileNetV1: a stride-2 3x3 ConvBNLayer (32 x scale channels), 13 DepthwiseSeparable
    blocks (sublayers ``conv2_1`` ... ``conv6``), adaptive average pool (``with_pool``) and
    Linear(1024 x scale, ``num_classes``) (none when ``num_classes <= 0``)."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.scale, self.num_classes, self.with_pool = scale, num_classes, with_pool
        self.conv1 = ConvBNLayer(3, int(32 * scale), kernel_size=3, stride=2, padding=1)
        self.dwsl = []
        for name, (cin, out1, out2, groups, stride) in zip(_V1_NAMES, _V1_BLOCKS):
            block = DepthwiseSeparable(int(cin * scale), out1, out2, groups, stride, scale)
            self.add_sublayer(name, block)
            self.dwsl.append(block)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x):
        """[N, 3, H, W] images -> [N, num_classes] logits."""
        x = self.conv1(x)
        for block in self.dwsl:
            x = block(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.fc(flatten(x, 1))
        return x


def _make_divisible(v, divisor, min_value=None):
    """Round channels to a multiple of ``divisor``, never more than 10% below ``v``."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def conv_norm_activation(in_channels, out_channels, kernel_size=3, stride=1, groups=1):
    """Conv2D (padding (k - 1) // 2, no bias) + BatchNorm2D + ReLU6, as one Sequential."""
    return nn.Sequential(nn.Conv2D(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2,
                                   groups=groups, bias_attr=False),
                         nn.BatchNorm2D(out_channels), nn.ReLU6())


class InvertedResidual(nn.Layer):
    """1x1 expansion (when ``expand_ratio != 1``), 3x3 depthwise, 1x1 linear projection + BN;
    a residual connection when the stride is 1 and the channel count is unchanged."""

    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [conv_norm_activation(inp, hidden_dim, kernel_size=1)] if expand_ratio != 1 else []
        layers += [conv_norm_activation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                   nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False), nn.BatchNorm2D(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


# (expansion t, channels c, repeats n, first stride s)
_V2_SETTING = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
               [6, 320, 1, 1]]


class MobileNetV2(nn.Layer):
    """MobileNetV2: ``features`` (a stride-2 3x3 conv, 17 InvertedResidual blocks, a 1x1 conv to
    1280 x max(1, scale) channels), adaptive average pool (``with_pool``) and ``classifier``
    (Dropout(0.2) + Linear; none when ``num_classes <= 0``)."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.num_classes, self.with_pool = num_classes, with_pool
        input_channel = _make_divisible(32 * scale, 8)
        self.last_channel = _make_divisible(1280 * max(1.0, scale), 8)
        features = [conv_norm_activation(3, input_channel, stride=2)]
        for t, c, n, s in _V2_SETTING:
            output_channel = _make_divisible(c * scale, 8)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t))
                input_channel = output_channel
        features.append(conv_norm_activation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        """[N, 3, H, W] images -> [N, num_classes] logits."""
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = self.classifier(flatten(x, 1))
        return x


def mobilenet_v1(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV1 with width multiplier ``scale``; keyword arguments go to ``MobileNetV1``."""
    no_pretrained("mobilenet_v1", pretrained)
    return MobileNetV1(scale=scale, **kwargs)


def mobilenet_v2(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV2 with width multiplier ``scale``; keyword arguments go to ``MobileNetV2``."""
    no_pretrained("mobilenet_v2", pretrained)
    return MobileNetV2(scale=scale, **kwargs)
