"""The high-level API (``paddle.hapi``)."""
from .flops import flops  # noqa: F401  (metric helper: paddle.flops)
from .summary import summary  # noqa: F401  (metric helper: paddle.summary)
