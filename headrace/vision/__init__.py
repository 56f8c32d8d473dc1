"""``paddle.vision``: the model zoo (``paddle.vision.models``; its names are also here, as the
reference)."""
from . import models  # noqa: F401
from .models import *  # noqa: F401,F403
