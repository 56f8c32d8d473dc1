"""LeNet, as the reference's ``paddle.vision.models.LeNet``."""
from ... import nn
from ...nn.tensor import flatten


class LeNet(nn.Layer):
    """LeNet-5 for 1x28x28 images: conv(6, 3x3, pad 1) - relu - maxpool 2 - conv(16, 5x5) - relu -
    maxpool 2, then Linear 400-120-84-``num_classes`` (no classifier when ``num_classes <= 0``).
    61,610 parameters with 10 classes."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0), nn.ReLU(), nn.MaxPool2D(2, 2))
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, inputs):
        """[N, 1, 28, 28] images -> [N, num_classes] logits (the [N, 16, 5, 5] features without a classifier)."""
        x = self.features(inputs)
        if self.num_classes > 0:
            x = self.fc(flatten(x, 1))
        return x
