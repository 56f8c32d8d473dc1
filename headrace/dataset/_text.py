"""The text datasets' readers (imikolov's PTB text, IMDB reviews), shared by ``paddle.dataset``
(1.x) and ``paddle.text`` (2.x).  As the reference (Python 3), words read from the files are
``bytes`` while the special tokens ``'<s>'``, ``'<e>'`` and ``'<unk>'`` are ``str`` keys of the
word dictionaries, and ids are given by decreasing frequency, ties broken by the word.

Two deliberate differences, where the reference fails: a dictionary in which no word passes the
frequency cutoff is ``{'<unk>': 0}`` (the reference raises from ``zip``), and ties between a
``bytes`` word and a ``str`` token sort by their UTF-8 bytes (the reference raises ``TypeError``
comparing them).
"""
from __future__ import annotations

import collections
import string

from ._files import DatasetFileError, member_bytes, open_tar

PTB_DIR = "./simple-examples/data/"
_PUNCTUATION = string.punctuation.encode("latin-1")


def member_lines(path, name: str) -> list:
    """The lines (``bytes``, with their newlines) of member ``name`` of the tarball at ``path``."""
    with open_tar(path) as tar:
        return member_bytes(tar, path, name).splitlines(keepends=True)


def word_count(lines, word_freq=None):
    """Word frequencies of ``lines`` added to ``word_freq``; each line also counts one ``'<s>'`` and one ``'<e>'``."""
    if word_freq is None:
        word_freq = collections.defaultdict(int)
    for line in lines:
        for w in line.strip().split():
            word_freq[w] += 1
        word_freq["<s>"] += 1
        word_freq["<e>"] += 1
    return word_freq


def _sort_key(item):
    word, freq = item
    return -freq, word.encode("utf-8") if isinstance(word, str) else word


def ranked_dict(word_freq, cutoff: int) -> dict:
    """``{word: id}`` over the words seen more than ``cutoff`` times, most frequent first, then ``'<unk>'``."""
    kept = sorted(((w, f) for w, f in word_freq.items() if f > cutoff), key=_sort_key)
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx["<unk>"] = len(kept)
    return word_idx


def imikolov_dict(path, min_word_freq: int = 50) -> dict:
    """The imikolov word dictionary built from ``ptb.train.txt`` and ``ptb.valid.txt``."""
    freq = word_count(member_lines(path, PTB_DIR + "ptb.valid.txt"),
                      word_count(member_lines(path, PTB_DIR + "ptb.train.txt")))
    freq.pop("<unk>", None)   # (the reference's del; file words are bytes, so b'<unk>' stays a word)
    return ranked_dict(freq, min_word_freq)


def imikolov_samples(path, split: str, word_idx: dict, n: int, data_type: str) -> list:
    """The samples of ``ptb.<split>.txt``: n-gram id tuples (``data_type`` 'NGRAM', window ``n``) or
    (source ids, target ids) pairs ('SEQ': ``<s>`` + line and line + ``<e>``; lines whose source is
    longer than ``n`` are skipped when ``n > 0``)."""
    unk, out = word_idx["<unk>"], []
    for line in member_lines(path, PTB_DIR + f"ptb.{split}.txt"):
        if data_type == "NGRAM":
            if n <= -1:
                raise ValueError(f"Invalid gram length {n}: NGRAM data needs a window size > -1")
            words = ["<s>", *line.strip().split(), "<e>"]
            if len(words) >= n:
                ids = [word_idx.get(w, unk) for w in words]
                out.extend(tuple(ids[i - n:i]) for i in range(n, len(ids) + 1))
        elif data_type == "SEQ":
            ids = [word_idx.get(w, unk) for w in line.strip().split()]
            src, trg = [word_idx["<s>"], *ids], [*ids, word_idx["<e>"]]
            if not (n > 0 and len(src) > n):
                out.append((src, trg))
        else:
            raise ValueError(f"data type should be 'NGRAM' or 'SEQ', got {data_type!r}")
    return out


def imdb_tokenize(path, pattern) -> list:
    """Token lists (``bytes`` words) of the members of the IMDB tarball whose name matches the
    compiled ``pattern``, in archive order: trailing newlines and ASCII punctuation removed, lower-cased."""
    docs = []
    with open_tar(path) as tar:
        for info in tar:
            if info.isfile() and pattern.match(info.name):
                text = tar.extractfile(info).read()
                docs.append(text.rstrip(b"\n\r").translate(None, _PUNCTUATION).lower().split())
    return docs


def imdb_dict(path, pattern, cutoff: int) -> dict:
    """The IMDB word dictionary over the documents matching ``pattern``."""
    freq = collections.defaultdict(int)
    for doc in imdb_tokenize(path, pattern):
        for word in doc:
            freq[word] += 1
    return ranked_dict(freq, cutoff)


def imdb_samples(path, split_pattern: str, word_idx: dict) -> list:
    """(ids, label) of every review of a split: ``aclImdb/<split>/pos`` first (label 0), then neg (label 1)."""
    import re

    unk, out = word_idx["<unk>"], []
    for label, kind in ((0, "pos"), (1, "neg")):
        pattern = re.compile(rf"aclImdb/{split_pattern}/{kind}/.*\.txt$")
        out.extend(([word_idx.get(w, unk) for w in doc], label) for doc in imdb_tokenize(path, pattern))
    return out


__all__ = ["DatasetFileError", "imdb_dict", "imdb_samples", "imdb_tokenize", "imikolov_dict",
           "imikolov_samples", "member_lines", "ranked_dict", "word_count"]
