"""``paddle.incubate``: where the reference system keeps newer optimizers (facade, no logic)."""
from . import distributed, optimizer

__all__ = ["distributed", "optimizer"]
