"""``paddle.distributed.fleet``: ``recompute`` (dygraph activation recompute) and ``utils``."""
from . import utils
from .utils import recompute

__all__ = ["recompute", "utils"]
