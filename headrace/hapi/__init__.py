"""The high-level API (``paddle.hapi``): ``Model``, callbacks, ``summary``, ``flops``."""
from . import callbacks  # noqa: F401
from .flops import flops  # noqa: F401  (metric helper: paddle.flops)
from .model import Model  # noqa: F401
from .summary import summary  # noqa: F401  (metric helper: paddle.summary)
