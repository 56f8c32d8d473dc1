"""``paddle.hapi``: the high-level API (``Model``, callbacks)."""
from . import callbacks  # noqa: F401
from .model import Model  # noqa: F401
