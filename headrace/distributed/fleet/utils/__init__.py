"""``paddle.distributed.fleet.utils``: ``from paddle.distributed.fleet.utils import recompute``."""
from ....eager.recompute import recompute

__all__ = ["recompute"]
