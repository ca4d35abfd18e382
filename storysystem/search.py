"""BM25F search over the reference library, in memory.

Written here rather than taken from a library because the product *is* the ranking: Chinese needs
its own tokenization (the kernel's character bigrams, kernel/bigrams.py — the same as the memory's chunk
index — plus whole terms split on ``|`` and punctuation, without question-word bigrams), the contract
fields carry different weights (意图与同义词 > 关键词 > 核心摘要 > 详细展开), and the index must answer
in well under a millisecond for ~1,000 rows. Every (term, entry) contribution is query-independent
under BM25F, so the postings store final contributions and a query is a handful of dictionary lookups
and additions.

The index is built once per library version token (``LibraryState``), cached in-process and kept on disk
(``WEBNOVEL_REFERENCE_INDEX_DIR``, default var/reference-index) so that a fresh process — a ``story
story-system-search`` call — loads it in milliseconds instead of rebuilding it (a quarter of a second for
~800 rows).
"""

import gc
import heapq
import logging
import marshal
import re
import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection

from kernel.bigrams import CJK_CHARS, cjk_bigrams
from kernel.bm25 import IndexFile, length_norm
from kernel.bm25 import idf as bm25_idf
from kernel.exceptions import Conflict
from storysystem.conf import anti_pattern_fields, conf
from storysystem.models import LibraryState, ReferenceEntry

if TYPE_CHECKING:
    from storysystem.profiles import RouteProfiles

logger = logging.getLogger(__name__)

SPLIT = re.compile(r"[\s|,，。、；;：:！!？?（）()【】\[\]「」『』“”\"'‘’《》<>/\\·…—\-_+=*#@&%~`^$]+")
CJK = re.compile(f"[{CJK_CHARS}]")
WORD = re.compile(f"[a-z0-9]+|[{CJK_CHARS}]+")
_MAX_WHOLE = 12  # longer runs are prose, not terms: bigrams cover them


# Bigrams of question words: in every 意图与同义词 ("…怎么写"), so they carry no signal and only
# drag unrelated entries into a result list.
STOP_BIGRAMS = frozenset({"怎么", "么写", "什么", "如何", "怎样", "一个", "一点", "这个", "那个", "么办"})


def tokenize(text: str) -> list[str]:
    """Tokens of ``text``: every segment between separators as a whole term (if short enough),
    plus the kernel's character bigrams of each CJK run (a single CJK character stands for itself;
    question words are dropped), plus latin words, in the order they appear."""
    tokens: list[str] = []
    for segment in SPLIT.split(text.lower()):
        if not segment:
            continue
        if 1 < len(segment) <= _MAX_WHOLE:
            tokens.append(segment)
        for run in WORD.findall(segment):
            if CJK.match(run):
                tokens.extend(b for b in cjk_bigrams(run) if b not in STOP_BIGRAMS)
            elif run != segment:
                tokens.append(run)
    return tokens


def split_multi(cell: str) -> list[str]:
    """The values of a multi-valued cell (``a|b|c``), stripped, empty ones dropped."""
    return [v.strip() for v in (cell or "").split("|") if v.strip()]


class Doc:
    """One library entry as the index holds it. ``payload`` (the entry's answer: texts, fields,
    anti-patterns) is decoded from the disk cache on first use: a search reads the payloads of its
    hits only, not of the ~800 rows."""

    __slots__ = ("id", "code", "table", "library", "skills", "genres", "_payload", "_raw")

    def __init__(
        self,
        id: int,
        code: str,
        table: str,
        library: str,
        skills: frozenset[str],
        genres: frozenset[str],
        payload: dict[str, Any] | None = None,
        raw: bytes | None = None,
    ) -> None:
        self.id, self.code, self.table, self.library = id, code, table, library
        self.skills, self.genres = skills, genres
        self._payload, self._raw = payload, raw

    @property
    def payload(self) -> dict[str, Any]:
        if self._payload is None:
            payload = marshal.loads(self._raw or b"")
            if not isinstance(payload, dict):
                raise Conflict(
                    f"参考资料检索索引缓存损坏（条目 {self.code}）：删除 WEBNOVEL_REFERENCE_INDEX_DIR 下的文件后重试"
                )
            self._payload, self._raw = payload, None
        return self._payload


class Postings:
    """term -> (entry indexes, BM25F contributions), packed: every term's run in two flat arrays, found by
    its offsets. Not a dict of ~60k pairs of arrays: a few flat buffers that the garbage collector never
    walks and that a fresh process reads from the disk cache as they are.

    A built index finds a term's run through ``slots``; one loaded from the disk cache has its terms as
    one sorted UTF-8 buffer (``term_bytes``, cut by ``term_offsets``; run i is the i-th term) and
    finds a term by binary search, remembering the terms it found: no 60k strings and no dict to
    make before the first answer."""

    __slots__ = ("slots", "offsets", "ids", "contributions", "term_bytes", "term_offsets")

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}  # term -> its run
        self.offsets = array("I", [0])  # run i is [offsets[i], offsets[i + 1])
        self.ids = array("I")
        self.contributions = array("d")
        self.term_bytes = b""
        self.term_offsets = array("I", [0])

    def slot(self, term: str) -> int | None:
        slot = self.slots.get(term)
        if slot is not None or not self.term_bytes:
            return slot
        key, blob, cuts = term.encode(), self.term_bytes, self.term_offsets
        lo, hi = 0, len(cuts) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[cuts[mid] : cuts[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(cuts) - 1 and blob[cuts[lo] : cuts[lo + 1]] == key:
            self.slots[term] = lo  # bounded by the index's terms: a miss is never kept
            return lo
        return None

    def get(self, term: str) -> tuple[array, array] | None:
        slot = self.slot(term)
        if slot is None:
            return None
        start, end = self.offsets[slot], self.offsets[slot + 1]
        return self.ids[start:end], self.contributions[start:end]

    def terms(self) -> list[str]:
        """Every term, in run order."""
        if not self.term_bytes:
            return list(self.slots)
        blob, cuts = self.term_bytes, self.term_offsets
        return [blob[cuts[i] : cuts[i + 1]].decode() for i in range(len(cuts) - 1)]


@dataclass
class Index:
    token: str
    docs: list[Doc] = field(default_factory=list)
    postings: Postings = field(default_factory=Postings)
    doc_by_key: dict[tuple[str, str, str], Doc] = field(default_factory=dict)
    # The genre profiles of the routing rows: built on the first route, not with the index (a search
    # never needs them).
    profiles: "RouteProfiles | None" = None

    def genre_docs(self, *, table: str, genres: list[str]) -> list[Doc]:
        """The table's entries in file order: those written for one of ``genres`` first, then 全部."""
        wanted = set(genres)
        docs = [d for d in self.docs if d.table == table]
        specific = [d for d in docs if d.genres & wanted]
        general = [d for d in docs if not d.genres or "全部" in d.genres]
        return list(dict.fromkeys([*specific, *general])) if wanted else general

    def search(
        self,
        query: str,
        *,
        table: str | None = None,
        skill: str | None = None,
        genres: list[str] | None = None,
        max_results: int = 10,
    ) -> tuple[int, list[tuple[Doc, float, list[str]]]]:
        """(total matches after filters, top ``max_results`` as (doc, score, matched terms))."""
        terms = list(dict.fromkeys(tokenize(query)))
        scores: dict[int, float] = defaultdict(float)
        for term in terms:
            posting = self.postings.get(term)
            if posting is None:
                continue
            for doc_idx, contribution in zip(posting[0], posting[1], strict=True):
                scores[doc_idx] += contribution
        wanted = set(genres or ())
        kept = []
        for doc_idx, score in scores.items():
            doc = self.docs[doc_idx]
            if table and doc.table != table:
                continue
            if skill and skill not in doc.skills:
                continue
            if wanted and doc.genres and "全部" not in doc.genres and not (doc.genres & wanted):
                continue
            kept.append((-score, doc.table, doc.code, doc_idx))
        top = heapq.nsmallest(max_results, kept)
        runs = {t: set(p[0]) for t in terms if (p := self.postings.get(t)) is not None}
        hits = []
        for neg, _, _, doc_idx in top:
            hits.append((self.docs[doc_idx], -neg, [t for t, ids in runs.items() if doc_idx in ids]))
        return len(kept), hits


def index_build(*, token: str, entries: list[Any]) -> Index:
    """Build the BM25F index of ``entries`` (ReferenceEntry rows with table and library loaded)."""
    weights: dict[str, float] = conf("field_weights")
    k1, b = float(conf("bm25_k1")), float(conf("bm25_b"))
    banned = set(anti_pattern_fields())  # 反套路变种 stays: it is content, never an anti-pattern
    index = Index(token=token)
    field_tf: list[dict[str, dict[str, int]]] = []
    field_len: list[dict[str, int]] = []
    for entry in entries:
        fields = {name: getattr(entry, name) for name in weights if name != "extra"}
        if "extra" in weights:
            fields["extra"] = " ".join(str(v) for k, v in (entry.extra or {}).items() if k not in banned)
        tfs, lens = {}, {}
        for name, text in fields.items():
            toks = tokenize(text or "")
            tfs[name], lens[name] = Counter(toks), len(toks)
        field_tf.append(tfs)
        field_len.append(lens)
        index.docs.append(
            Doc(
                id=entry.id,
                code=entry.code,
                table=entry.table.name,
                library=entry.table.library.name,
                skills=frozenset(split_multi(entry.skills)),
                genres=frozenset(split_multi(entry.genres)),
                payload=_payload(entry, banned),
            )
        )
        payload = index.docs[-1].payload
        payload["anti_patterns"] = anti_patterns_normalize(
            table=payload["table"], code=payload["code"], cells=payload["anti_pattern_cells"]
        )
    index.doc_by_key = {(d.library, d.table, d.code): d for d in index.docs}
    n = len(index.docs)
    if not n:
        return index
    avg = {name: (sum(lens[name] for lens in field_len) / n) or 1.0 for name in weights}
    weighted_tf: dict[str, dict[int, float]] = defaultdict(dict)
    for doc_idx, (tfs, lens) in enumerate(zip(field_tf, field_len, strict=True)):
        for name, counts in tfs.items():
            scale = weights[name] / length_norm(lens[name], avg[name], b)
            for term, tf in counts.items():
                per_doc = weighted_tf[term]
                per_doc[doc_idx] = per_doc.get(doc_idx, 0.0) + scale * tf
    postings = index.postings
    for term, per_doc in weighted_tf.items():
        df = len(per_doc)
        idf = bm25_idf(n, df)
        postings.slots[term] = len(postings.slots)
        postings.ids.extend(per_doc.keys())
        postings.contributions.extend(idf * w * (k1 + 1) / (k1 + w) for w in per_doc.values())
        postings.offsets.append(len(postings.ids))
    return index


def _payload(entry: Any, banned: set[str]) -> dict[str, Any]:
    return {
        "code": entry.code,
        "table": entry.table.name,
        "library": entry.table.library.name,
        "category": entry.category,
        "level": entry.level,
        "skills": split_multi(entry.skills),
        "genres": split_multi(entry.genres),
        "keywords": split_multi(entry.keywords),
        "intents": split_multi(entry.intents),
        "instruction": entry.instruction,
        "summary": entry.summary,
        "detail": entry.detail,
        "fields": {k: str(v) for k, v in (entry.extra or {}).items() if k not in banned},
        "anti_pattern_cells": {k: v for k, v in (entry.extra or {}).items() if k in banned},
    }


def anti_patterns_normalize(*, table: str, code: str, cells: dict[str, str]) -> list[dict[str, str]]:
    """One entry's anti-patterns: every value of every anti-pattern column, in field-map order."""
    return [
        {"text": text, "source_table": table, "source_code": code, "field": column}
        for column in anti_pattern_fields()
        for text in split_multi(cells.get(column, ""))
    ]


# The library columns of the routing rows (题材与调性推理), read by the genre profiles and the routing.
ROUTE_NAME = "题材/流派"
# Columns that hold terms (tags), as opposed to prose.
TAG_COLUMNS = frozenset({ROUTE_NAME, "canonical_genre", "题材别名", "关键词", "默认查询词", "意图与同义词", "必选爽点"})
# The settings that shape the genre profiles (storysystem/profiles.py): part of the index's key.
PROFILE_SETTINGS = (
    "route_profile_weights",
    "route_profile_library_weights",
    "route_profile_unigrams",
    "route_profile_unigram_weight",
    "route_profile_k1",
    "route_profile_b",
    "route_thesaurus",
    "route_thesaurus_weight",
    "route_thesaurus_name_boost",
)

# Function characters of written Chinese. Without a segmenter, a bigram holding one mostly spans
# a word boundary (后的, 院里, 就被): in a genre profile such bigrams are noise, not vocabulary.
FUNCTION_CHARS = frozenset(
    "的了着过是在和与及或就被把给对从向于也都又还很太更最个这那些么之其而且但若所为吗呢吧啊呀嘛得地"
)


_lock = threading.Lock()
_cached: Index | None = None
_pinned: ContextVar[Index | None] = ContextVar("storysystem_index", default=None)


@contextmanager
def index_pinned() -> Iterator[Index]:
    """Use one index for a whole block (a StorySystemDict build runs a dozen searches): one version
    check instead of one per search, and every search of the block sees the same library version."""
    reset = _pinned.set(index_get())
    try:
        yield _pinned.get()
    finally:
        _pinned.reset(reset)


def index_get() -> Index:
    """The index of the enabled libraries' contract tables, rebuilt when the version token moved."""
    global _cached
    pinned = _pinned.get()
    if pinned is not None:
        return pinned
    # Raw SQL: this runs before every search, and the ORM's query building costs more than the query.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT token FROM {LibraryState._meta.db_table} WHERE id = 1")
        row = cursor.fetchone()
    token = row[0] if row else ""
    # The settings that shape the index are part of its key (tests and admins may change them).
    token += repr((anti_pattern_fields(), conf("field_weights"), conf("bm25_k1"), conf("bm25_b")))
    token += repr([conf(name) for name in PROFILE_SETTINGS])
    current = _cached
    if current is not None and current.token == token:
        return current
    with _lock:
        if _cached is not None and _cached.token == token:
            return _cached
        # No stored token (a library never written): nothing names this content, so nothing is kept on disk.
        path = _disk_path(token) if row and row[0] else None
        loaded = _disk_load(path, token) if path is not None else None
        if loaded is not None:
            _cached = loaded
            return _cached
        entries = list(
            ReferenceEntry.objects.filter(table__library__enabled=True, table__key_column="编号")
            .select_related("table", "table__library")
            .order_by("table__library__name", "table__name", "position", "code")
        )
        # Building allocates ~100k short-lived containers: pausing the cyclic collector (nothing
        # here forms cycles) cuts the build time by about a third.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            _cached = index_build(token=token, entries=entries)
        finally:
            if was_enabled:
                gc.enable()
        if path is not None:
            _disk_save(path, _cached)
        return _cached


# The layout of the file is its magic: a change of the format never reads an older file.
_DISK_MAGIC = b"WNREFIX3"
_DISK = IndexFile(
    setting="WEBNOVEL_REFERENCE_INDEX_DIR", kind="reference", magic=_DISK_MAGIC, label="参考资料检索索引缓存"
)


def _disk_path(token: str) -> Path | None:
    """The index's file: named by the database (kernel/bm25.py) and by a hash of the full token (library
    version, the settings that shape the index). The token is random per library write, so a name is
    never reused for other content."""
    return _DISK.path(version=token)


def _disk_load(path: Path, token: str) -> Index | None:
    """The index in ``path``, decoded only as far as a first search needs: the entries' short fields;
    the payloads stay marshal bytes until read (``Doc.payload``), the terms one sorted buffer
    (``Postings.slot``), the runs flat arrays."""
    body = _DISK.read(path)
    if body is None:
        return None
    try:
        docs, cuts, term_offsets, offsets, ids, contributions, terms, payloads = marshal.loads(body)
        postings = Postings()
        postings.term_bytes = terms
        for target, raw in (
            (postings.term_offsets, term_offsets),
            (postings.offsets, offsets),
            (postings.ids, ids),
            (postings.contributions, contributions),
        ):
            del target[:]
            target.frombytes(raw)
        bounds = array("I")
        bounds.frombytes(cuts)
        runs = len(postings.offsets) - 1
        if not (
            len(bounds) == len(docs) + 1
            and len(postings.term_offsets) == runs + 1
            and postings.offsets[-1] == len(postings.ids) == len(postings.contributions)
            and bounds[-1] == len(payloads)
            and postings.term_offsets[-1] == len(terms)
        ):
            raise ValueError("inconsistent sections")
        index = Index(
            token=token,
            docs=[
                Doc(id, code, table, library, skills, genres, raw=payloads[bounds[i] : bounds[i + 1]])
                for i, (id, code, table, library, skills, genres) in enumerate(docs)
            ],
            postings=postings,
        )
    except (ValueError, EOFError, TypeError):
        _DISK.damaged(path)
        return None
    index.doc_by_key = {(d.library, d.table, d.code): d for d in index.docs}
    return index


def _disk_save(path: Path, index: Index) -> None:
    """Write the index for the next process (best effort: a read never fails for a cache it cannot write)."""
    p = index.postings
    # Runs in the byte order of their terms' UTF-8 (what the loader's binary search compares).
    encoded = sorted((term.encode(), slot) for term, slot in zip(p.terms(), range(len(p.offsets) - 1), strict=True))
    terms, term_offsets = bytearray(), array("I", [0])
    offsets, ids, contributions = array("I", [0]), array("I"), array("d")
    for key, slot in encoded:
        terms += key
        term_offsets.append(len(terms))
        start, end = p.offsets[slot], p.offsets[slot + 1]
        ids.extend(p.ids[start:end])
        contributions.extend(p.contributions[start:end])
        offsets.append(len(ids))
    payloads, cuts = bytearray(), array("I", [0])
    for d in index.docs:
        payloads += marshal.dumps(d.payload)
        cuts.append(len(payloads))
    docs = [(d.id, d.code, d.table, d.library, d.skills, d.genres) for d in index.docs]
    body = marshal.dumps(
        (
            docs,
            cuts.tobytes(),
            term_offsets.tobytes(),
            offsets.tobytes(),
            ids.tobytes(),
            contributions.tobytes(),
            bytes(terms),
            bytes(payloads),
        )
    )
    _DISK.write(path, body)
