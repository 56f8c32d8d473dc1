"""``paddle.metric``: streaming metrics (Metric, Accuracy, Precision, Recall, Auc) and ``accuracy``."""
from .metrics import Accuracy, Auc, Metric, Precision, Recall, accuracy

__all__ = ["Accuracy", "Auc", "Metric", "Precision", "Recall", "accuracy"]
