"""Chinese text into index terms: the one bigram tokenizer of both BM25 indexes (the reference
library's, storysystem/search.py, and the chapter chunks', memory/retrieval.py).

Character bigrams of every CJK run are the standard dictionary-free choice for Chinese retrieval: no
segmentation errors on invented names (断剑青岚), no dictionary to ship. A lone CJK character stands for
itself; latin words are lower-cased. Each index adds the terms of its own domain on top — the library
its short cells as whole terms and no question-word bigrams, the chunks every entity name found — and
keeps its own order of terms, which its stored postings and scores depend on.
"""

import operator
import re
from collections.abc import Iterable

CJK_CHARS = "\u3400-\u9fff\uf900-\ufaff"  # CJK unified ideographs, extension A, compatibility ideographs
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def cjk_bigrams(run: str) -> Iterable[str]:
    """The character bigrams of one CJK run, in order (a single character stands for itself)."""
    if len(run) == 1:
        return (run,)
    return map(operator.add, run[:-1], run[1:])  # the bigrams, without a slice per position


def text_bigrams(text: str) -> list[str]:
    """The bigrams of every CJK run of ``text``, then its ASCII words lower-cased."""
    terms: list[str] = []
    for run in CJK_RUN.findall(text):
        terms += cjk_bigrams(run)
    terms.extend(w.lower() for w in ASCII_WORD.findall(text))
    return terms


_CJK_RANGES = ((0x3400, 0x9FFF), (0xF900, 0xFAFF))  # CJK_CHARS as code point ranges
_SEPARATOR = "\x00"  # between two texts of one batch: neither a CJK character nor part of an ASCII word


def bigram_lines(texts: list[str]) -> list[str]:
    """For each text, ``" ".join(text_bigrams(text))`` without its ASCII words: the CJK bigrams (a
    lone character for itself) joined by spaces — computed for the whole batch at once with numpy.

    Why: the memory chunks store their terms as one string (30,000 chunks, ~9 M bigrams at 3,000
    chapters), and making each bigram a Python string only to join them again was most of a
    rebuild's chunk indexing. Here every character of the batch is looked at once in C: a CJK
    character inside a run is written as ``c c`` (it ends one bigram and starts the next), a run's
    last character is followed by a space, every other character of a run is written as it is, and
    anything else is dropped. ``"abcd"`` becomes ``"ab bc cd "``, a lone ``"x"`` ``"x "``; the texts
    are joined by a separator the scan keeps, and each part loses its trailing space."""
    if not texts:
        return []
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:  # a text holding the separator itself: one by one
        return [" ".join(term for run in CJK_RUN.findall(t) for term in cjk_bigrams(run)) for t in texts]
    import numpy as np  # noqa: PLC0415 — a dependency, but imported only by the writers (as core/fingerprint.py)

    units = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")
    cjk = np.zeros(units.size, dtype=bool)
    for low, high in _CJK_RANGES:
        cjk |= (units >= low) & (units <= high)
    before = np.zeros(units.size, dtype=bool)
    before[1:] = cjk[:-1]
    after = np.zeros(units.size, dtype=bool)
    after[:-1] = cjk[1:]
    inner = cjk & before & after
    grid = np.empty((units.size, 3), dtype="<u4")
    grid[:, 0] = units
    grid[:, 1] = ord(" ")
    grid[:, 2] = units
    keep = np.empty((units.size, 3), dtype=bool)
    keep[:, 0] = cjk | (units == ord(_SEPARATOR))
    keep[:, 1] = inner | (cjk & ~after)
    keep[:, 2] = inner
    out = grid[keep].tobytes().decode("utf-32-le")
    return [part[:-1] if part.endswith(" ") else part for part in out.split(_SEPARATOR)]
