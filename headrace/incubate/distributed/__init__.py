"""``paddle.incubate.distributed``: ``fleet.recompute_sequential`` (facade)."""
from . import fleet

__all__ = ["fleet"]
