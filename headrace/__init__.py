"""headrace: declarative deep learning on NumPy."""
from . import ops  # noqa: F401  (registers every op)
