"""jieba's packaged dictionary as a word → (frequency, part of speech) table that needs no
``jieba.initialize``: the same ``dict.txt`` lines, sorted by word and written once to the data
directory's cache (keyed by jieba's version and the dictionary file's size and time), then read by
binary search over a memory map.

Why: a draft check asks the dictionary a handful of questions (is 禅杖 a common noun, is 将 a function
word, does a word start at 身边). Answering them through jieba loads its prefix dictionary and its
tag table (~1–3 s, ~70 MB per process) for a few lookups; the map answers in microseconds and shares
its pages between processes. The answers are jieba's: ``FREQ`` and ``word_tag_tab`` are read from
the same lines, the last line of a word winning as in both of jieba's loaders."""

import importlib.metadata
import importlib.util
import logging
import mmap
import os
import sys
import tempfile
import threading
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_MAP: mmap.mmap | None = None
_TOTAL: int | None = None


def dictionary_path() -> Path:
    """The dictionary file jieba's default tokenizer reads. jieba itself is not imported for it (its
    import loads the HMM tables, ~0.25 s): the check's module is imported by every ``story`` process."""
    loaded = sys.modules.get("jieba")
    if loaded is not None and loaded.dt.dictionary:
        return Path(loaded.dt.dictionary)
    return Path(importlib.util.find_spec("jieba").origin).with_name("dict.txt")


def _cache_dir() -> Path:
    return Path(settings.DATA_DIR) / "cache"


def _cache_name(source: Path) -> str:
    stat = source.stat()
    return f"jieba-{importlib.metadata.version('jieba')}-{stat.st_size}-{stat.st_mtime_ns}-lexicon.tsv"


def lexicon_build(*, source: Path, target: Path) -> Path:
    """Write ``source``'s entries as ``word \\t freq \\t tag`` lines sorted by the word's UTF-8 bytes
    (atomically: a reader never sees half a file)."""
    entries: dict[str, tuple[str, str]] = {}
    total = 0  # jieba's ``total``: the sum over every line, a word given twice counted twice
    with source.open("rb") as f:
        for raw in f:
            parts = raw.strip().decode("utf-8").split(" ")
            if len(parts) >= 2 and parts[0]:
                entries[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
                total += int(parts[1])
    lines = sorted(f"{word}\t{int(freq)}\t{tag}\n".encode() for word, (freq, tag) in entries.items())
    target.parent.mkdir(parents=True, exist_ok=True)
    # the total first: a table whose file exists has its total
    _write_atomic(_total_path(target), f"{total}\n".encode())
    _write_atomic(target, b"".join(lines))
    return target


def _total_path(target: Path) -> Path:
    return target.with_name(target.name.removesuffix(".tsv") + ".total")


def _write_atomic(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".lexicon-", suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, 0o644)  # a cache any process of the machine may map
    os.replace(tmp, target)


def _table_path() -> Path:
    """The sorted table's file (and its total's), built when missing (a table built before the total
    was kept is built again once)."""
    source = dictionary_path()
    name = _cache_name(source)
    target = _cache_dir() / name
    try:
        if not (target.exists() and _total_path(target).exists()):
            lexicon_build(source=source, target=target)
    except OSError as exc:  # a read-only data directory: the system's temporary one
        log.info("lexicon cache %s not writable (%s): using the temporary directory", target, exc)
        target = Path(tempfile.gettempdir()) / name
        if not (target.exists() and _total_path(target).exists()):
            lexicon_build(source=source, target=target)
    return target


def _map() -> mmap.mmap:
    global _MAP, _TOTAL
    if _MAP is None:
        with _LOCK:
            if _MAP is None:
                target = _table_path()
                _TOTAL = int(_total_path(target).read_text(encoding="ascii"))
                with target.open("rb") as f:
                    _MAP = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return _MAP


def total() -> int:
    """jieba's ``total`` (the sum of every line's frequency), which its segmentation divides by."""
    if _TOTAL is None:
        _map()
    return _TOTAL


def _first_at_or_after(data: mmap.mmap, key: bytes) -> int:
    """The offset of the first line whose word is ≥ ``key`` (lines are sorted by word)."""
    lo, hi = 0, len(data)
    while lo < hi:
        start = data.rfind(b"\n", lo, (lo + hi) // 2) + 1 or lo
        stop = data.find(b"\t", start)
        if data[start:stop] < key:
            lo = data.find(b"\n", stop) + 1
        else:
            hi = start
    return lo


def entry(word: str) -> tuple[int, str] | None:
    """(frequency, tag) of ``word`` in the dictionary, or None when it has no line ('' when untagged)."""
    data = _map()
    key = word.encode()
    at = _first_at_or_after(data, key)
    stop = data.find(b"\n", at)
    if stop < 0:
        return None
    word_b, freq, tag = data[at:stop].split(b"\t")
    if word_b != key:
        return None
    return int(freq), tag.decode()


def probe(word: str) -> tuple[bool, int, str | None]:
    """jieba's view of ``word`` in one search: whether its prefix dictionary holds it (a word of the
    dictionary or the beginning of one: ``word in FREQ``), its frequency (``FREQ[word]``: 0 for a
    beginning only) and its tag (None without a line of its own)."""
    data = _map()
    key = word.encode()
    at = _first_at_or_after(data, key)
    stop = data.find(b"\n", at)
    if stop < 0:
        return False, 0, None
    word_b, freq, tag = data[at:stop].split(b"\t")
    if word_b == key:
        return True, int(freq), tag.decode()
    # the lines are sorted: a word beginning with ``key`` would be the first at or after it
    return word_b.startswith(key), 0, None


def frequency(word: str) -> int:
    """jieba's ``FREQ.get(word) or 0`` for a word of the dictionary (a prefix only is 0 there too)."""
    found = entry(word)
    return found[0] if found else 0


def tag(word: str) -> str:
    """jieba's ``word_tag_tab.get(word, "")``."""
    found = entry(word)
    return found[1] if found else ""


def prefixed(prefix: str):
    """(word, frequency, tag) of every line whose word starts with ``prefix``, in byte order."""
    data = _map()
    key = prefix.encode()
    at = _first_at_or_after(data, key)
    while at < len(data):
        stop = data.find(b"\n", at)
        word_b, freq, tag = data[at:stop].split(b"\t")
        if not word_b.startswith(key):
            return
        yield word_b.decode(), int(freq), tag.decode()
        at = stop + 1
