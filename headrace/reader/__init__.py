"""``paddle.reader``: the 1.x reader decorators (``paddle.batch`` lives in ``batch.py``)."""
from .decorator import (ComposeNotAligned, buffered, cache, chain, compose, firstn, map_readers, shuffle,
                        xmap_readers)

__all__ = ["ComposeNotAligned", "buffered", "cache", "chain", "compose", "firstn", "map_readers", "shuffle",
           "xmap_readers"]
