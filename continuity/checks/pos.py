"""jieba's part-of-speech cut (``jieba.posseg.lcut(text)``, HMM on) answered from the lexicon
(continuity/checks/lexicon.py) instead of jieba's own tables: the same words and the same tags.

Why: ``import jieba.posseg`` reads the dictionary's 349k tags into a dict and its first cut loads
jieba's prefix dictionary (together ~1.5–3.7 s per process, ~70 MB), and a range check asks the
tagger only a few hundred short stretches (the words between a name and an item, after a name). The
cut below is jieba's ``POSTokenizer.__cut_internal`` step by step: the same word graph (``get_DAG``:
a word or the beginning of one, by ``lexicon.probe``), the same best route (``calc``: the same
logarithms of the same frequencies over the same ``total``, the same ties), the same buffering of
lone characters; a run of lone characters the dictionary does not hold goes to jieba's own HMM (its
``viterbi`` and its four tables, loaded from jieba's files on the first such run, ~0.07 s, without
the package's ``__init__`` and its tag table). tests/continuity/test_pos.py compares it with jieba."""

import importlib.util
import re
import threading
from functools import lru_cache
from math import log
from pathlib import Path
from types import SimpleNamespace

from continuity.checks import lexicon

# jieba.posseg's expressions (the same pattern strings: the test compares them)
RE_HAN_DETAIL = re.compile("([\u4e00-\u9fd5]+)")
RE_SKIP_DETAIL = re.compile("([\\.0-9]+|[a-zA-Z0-9]+)")
RE_HAN_INTERNAL = re.compile("([\u4e00-\u9fd5a-zA-Z0-9+#&\\._]+)")
RE_SKIP_INTERNAL = re.compile("(\r\n|\\s)")
RE_ENG = re.compile("[a-zA-Z0-9]+")
RE_NUM = re.compile("[\\.0-9]+")

_LOCK = threading.Lock()
_HMM: SimpleNamespace | None = None


def _hmm() -> SimpleNamespace:
    """jieba.posseg's ``viterbi`` and its tables, read from the package's own files."""
    global _HMM
    if _HMM is None:
        with _LOCK:
            if _HMM is None:
                folder = Path(importlib.util.find_spec("jieba").origin).parent / "posseg"
                loaded = {}
                for name in ("viterbi", "char_state_tab", "prob_start", "prob_trans", "prob_emit"):
                    spec = importlib.util.spec_from_file_location(f"{__name__}._jieba_{name}", folder / f"{name}.py")
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    loaded[name] = module
                _HMM = SimpleNamespace(
                    viterbi=loaded["viterbi"].viterbi,
                    states=loaded["char_state_tab"].P,
                    start=loaded["prob_start"].P,
                    trans=loaded["prob_trans"].P,
                    emit=loaded["prob_emit"].P,
                )
    return _HMM


@lru_cache(maxsize=65536)
def _probe(word: str) -> tuple[bool, int, str]:
    held, freq, tag = lexicon.probe(word)
    return held, freq, "x" if tag is None else tag  # word_tag_tab.get(word, 'x')


def _tag(word: str) -> str:
    return _probe(word)[2]


def _route(sentence: str) -> dict[int, tuple[float, int]]:
    """jieba's ``get_DAG`` then ``calc``."""
    n = len(sentence)
    dag = {}
    for k in range(n):
        ends = []
        i = k
        frag = sentence[k]
        while i < n:
            held, freq, _ = _probe(frag)
            if not held:
                break
            if freq:
                ends.append(i)
            i += 1
            frag = sentence[k : i + 1]
        dag[k] = ends or [k]
    route = {n: (0, 0)}
    logtotal = log(lexicon.total())
    for idx in range(n - 1, -1, -1):
        route[idx] = max((log(_probe(sentence[idx : x + 1])[1] or 1) - logtotal + route[x + 1][0], x) for x in dag[idx])
    return route


def _hmm_cut(sentence: str):
    """``POSTokenizer.__cut``: the HMM's words and tags for a run of Chinese characters."""
    hmm = _hmm()
    _, pos_list = hmm.viterbi(sentence, hmm.states, hmm.start, hmm.trans, hmm.emit)
    begin, nexti = 0, 0
    for i, char in enumerate(sentence):
        pos = pos_list[i][0]
        if pos == "B":
            begin = i
        elif pos == "E":
            yield sentence[begin : i + 1], pos_list[i][1]
            nexti = i + 1
        elif pos == "S":
            yield char, pos_list[i][1]
            nexti = i + 1
    if nexti < len(sentence):
        yield sentence[nexti:], pos_list[nexti][1]


def _cut_detail(sentence: str):
    """``POSTokenizer.__cut_detail``."""
    for blk in RE_HAN_DETAIL.split(sentence):
        if RE_HAN_DETAIL.match(blk):
            yield from _hmm_cut(blk)
        else:
            for x in RE_SKIP_DETAIL.split(blk):
                if x:
                    if RE_NUM.match(x):
                        yield x, "m"
                    elif RE_ENG.match(x):
                        yield x, "eng"
                    else:
                        yield x, "x"


def _flush(buf: str):
    """A run of lone characters on the route: one tagged character, the HMM's words when the run is
    no word of the dictionary, else each character with its tag."""
    if len(buf) == 1:
        yield buf, _tag(buf)
    elif not _probe(buf)[1]:
        yield from _cut_detail(buf)
    else:
        for elem in buf:
            yield elem, _tag(elem)


def _cut_dag(sentence: str):
    """``POSTokenizer.__cut_DAG``."""
    route = _route(sentence)
    x = 0
    buf = ""
    n = len(sentence)
    while x < n:
        y = route[x][1] + 1
        l_word = sentence[x:y]
        if y - x == 1:
            buf += l_word
        else:
            if buf:
                yield from _flush(buf)
                buf = ""
            yield l_word, _tag(l_word)
        x = y
    if buf:
        yield from _flush(buf)


def pos_cut(text: str) -> list[tuple[str, str]]:
    """(word, tag) pairs of ``text``: what ``[(p.word, p.flag) for p in jieba.posseg.lcut(text)]``
    gives with jieba's packaged dictionary."""
    out: list[tuple[str, str]] = []
    for blk in RE_HAN_INTERNAL.split(text):
        if RE_HAN_INTERNAL.match(blk):
            out.extend(_cut_dag(blk))
            continue
        for x in RE_SKIP_INTERNAL.split(blk):
            if RE_SKIP_INTERNAL.match(x):
                out.append((x, "x"))
                continue
            for xx in x:
                if RE_NUM.match(xx):
                    out.append((xx, "m"))
                elif RE_ENG.match(x):
                    out.append((xx, "eng"))
                else:
                    out.append((xx, "x"))
    return out
