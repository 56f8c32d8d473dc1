"""``paddle.text.datasets``: UCIHousing, Imikolov, Imdb over the real file formats."""
from .imdb import Imdb
from .imikolov import Imikolov
from .uci_housing import UCIHousing

__all__ = ["Imdb", "Imikolov", "UCIHousing"]
