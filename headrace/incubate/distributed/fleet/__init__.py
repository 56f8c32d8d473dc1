"""``paddle.incubate.distributed.fleet``: ``recompute_sequential`` (facade)."""
from ....nn.recompute_sequential import recompute_sequential

__all__ = ["recompute_sequential"]
