"""``paddle.optimizer``: optimizers that append update ops (static mode)."""
from . import lr
from .adam import Adam
from .momentum import Momentum
from .optimizer import Optimizer
from .recompute import RecomputeOptimizer
from .sgd import SGD

__all__ = ["Adam", "Momentum", "Optimizer", "RecomputeOptimizer", "SGD", "lr"]
