"""``paddle.text``: the text datasets (``paddle.text.datasets``; also importable from here)."""
from . import datasets  # noqa: F401
from .datasets import Imdb, Imikolov, UCIHousing  # noqa: F401

__all__ = ["Imdb", "Imikolov", "UCIHousing", "datasets"]
