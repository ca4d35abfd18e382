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
