"""paddle.flops on a network that calls one layer several times (found in review)."""
import pytest

import headrace as paddle
import headrace.nn as nn
from headrace.core import context


@pytest.fixture(autouse=True)
def _dygraph():
    with context.static_mode_guard(False):
        yield


class _Twice(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.fc(x))


def test_a_shared_layer_counts_every_call(capsys):
    # the reference's hooks add to the layer's total_ops on each call: 2 calls x (4 in x 2*4 out)
    assert paddle.flops(_Twice(), [2, 4]) == 2 * 4 * (2 * 4)
    assert "Total Flops: 64     Total Params: 20" in capsys.readouterr().out
