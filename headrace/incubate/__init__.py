"""``paddle.incubate``: where the reference system keeps newer optimizers (facade, no logic)."""
from . import optimizer

__all__ = ["optimizer"]
