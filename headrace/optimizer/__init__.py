"""``paddle.optimizer``: optimizers that append update ops (static mode)."""
from . import lr
from .adam import Adam
from .momentum import Momentum
from .optimizer import Optimizer
from .recompute import RecomputeOptimizer
from .sgd import SGD
from .adam_family import AdamW, Lamb, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, Adamax, RMSProp

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lamb", "Momentum", "NAdam", "Optimizer", "RAdam",
           "RMSProp", "RecomputeOptimizer", "SGD", "lr"]
