"""``paddle.dataset``: the 1.x dataset reader creators (``mnist``, ``cifar``, ``uci_housing``,
``imikolov``, ``imdb``) over the reference's cache layout ``DATA_HOME/<module>/<file>``
(``common.DATA_HOME`` = ``~/.cache/paddle/dataset``).  Nothing is downloaded: a missing file is a
``common.DatasetFileNotFoundError`` saying which file to put where."""
from . import cifar, common, imdb, imikolov, mnist, uci_housing  # noqa: F401

__all__ = ["cifar", "common", "imdb", "imikolov", "mnist", "uci_housing"]
