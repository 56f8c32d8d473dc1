"""``paddle.distributed``: the names user code imports (``fleet.utils.recompute``)."""
from . import fleet

__all__ = ["fleet"]
