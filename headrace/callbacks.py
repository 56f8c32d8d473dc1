"""``paddle.callbacks``: the hooks ``paddle.Model`` calls during fit/evaluate/predict."""
from .hapi.callbacks import (Callback, EarlyStopping, LRScheduler, ModelCheckpoint, ProgBarLogger,  # noqa: F401
                             ReduceLROnPlateau)
from .hapi.scalar_logger import ScalarLogger, VisualDL  # noqa: F401

__all__ = ["Callback", "EarlyStopping", "LRScheduler", "ModelCheckpoint", "ProgBarLogger", "ReduceLROnPlateau",
           "ScalarLogger", "VisualDL"]
