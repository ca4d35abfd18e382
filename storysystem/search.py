"""BM25F search over the reference library, in memory.

Written here rather than taken from a library because the product *is* the ranking: Chinese needs
its own tokenization (the kernel's character bigrams, kernel/text.py — the same as the memory's chunk
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
import hashlib
import heapq
import logging
import marshal
import math
import os
import re
import struct
import threading
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick
import yaml
from django.conf import settings
from django.db import connection

from kernel.exceptions import Conflict, InvalidInput
from kernel.text import CJK_CHARS, cjk_bigrams
from storysystem.conf import anti_pattern_fields, conf
from storysystem.models import LibraryState, ReferenceEntry

logger = logging.getLogger(__name__)

_SPLIT = re.compile(r"[\s|,，。、；;：:！!？?（）()【】\[\]「」『』“”\"'‘’《》<>/\\·…—\-_+=*#@&%~`^$]+")
_CJK = re.compile(f"[{CJK_CHARS}]")
_WORD = re.compile(f"[a-z0-9]+|[{CJK_CHARS}]+")
_MAX_WHOLE = 12  # longer runs are prose, not terms: bigrams cover them


# Bigrams of question words: in every 意图与同义词 ("…怎么写"), so they carry no signal and only
# drag unrelated entries into a result list.
STOP_BIGRAMS = frozenset({"怎么", "么写", "什么", "如何", "怎样", "一个", "一点", "这个", "那个", "么办"})


def tokenize(text: str) -> list[str]:
    """Tokens of ``text``: every segment between separators as a whole term (if short enough),
    plus the kernel's character bigrams of each CJK run (a single CJK character stands for itself;
    question words are dropped), plus latin words, in the order they appear."""
    tokens: list[str] = []
    for segment in _SPLIT.split(text.lower()):
        if not segment:
            continue
        if 1 < len(segment) <= _MAX_WHOLE:
            tokens.append(segment)
        for run in _WORD.findall(segment):
            if _CJK.match(run):
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
            scale = weights[name] / (1 - b + b * lens[name] / avg[name])
            for term, tf in counts.items():
                per_doc = weighted_tf[term]
                per_doc[doc_idx] = per_doc.get(doc_idx, 0.0) + scale * tf
    postings = index.postings
    for term, per_doc in weighted_tf.items():
        df = len(per_doc)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
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


# The layout of the file: part of its name, so a change of the format never reads an older file.
_DISK_FORMAT = 3
_DISK_MAGIC = b"WNREFIX3"


def _disk_path(token: str) -> Path | None:
    """The index's file: named by the database (two databases may hold different libraries under one
    folder) and by a hash of the full token (library version, the settings that shape the index, the
    format). The token is random per library write, so a name is never reused for other content."""
    configured = settings.WEBNOVEL_REFERENCE_INDEX_DIR
    if not configured:
        return None
    db = settings.DATABASES["default"]
    prefix = hashlib.sha1(f"{db.get('ENGINE')}|{db.get('HOST')}|{db.get('PORT')}|{db.get('NAME')}".encode()).hexdigest()
    version = hashlib.sha1(f"{_DISK_FORMAT}|{marshal.version}|{token}".encode()).hexdigest()
    return Path(configured) / f"{prefix[:16]}-{version[:20]}.marshal"


def _disk_load(path: Path, token: str) -> Index | None:
    """The index in ``path``, decoded only as far as a first search needs: the entries' short fields;
    the payloads stay marshal bytes until read (``Doc.payload``), the terms one sorted buffer
    (``Postings.slot``), the runs flat arrays. Marshal of plain values only (never pickle: the file
    lies in a folder a user can write), behind a CRC of the body."""
    try:
        data = path.read_bytes()
        if data[: len(_DISK_MAGIC)] != _DISK_MAGIC:
            raise ValueError("not an index file")
        crc, size = struct.unpack_from("<II", data, len(_DISK_MAGIC))
        body = memoryview(data)[len(_DISK_MAGIC) + 8 :]
        if len(body) != size or zlib.crc32(body) != crc:
            raise ValueError("truncated or damaged")
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
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError, struct.error):
        logger.warning("参考资料检索索引缓存无法读取，重建：%s", path, exc_info=True)
        return None
    index.doc_by_key = {(d.library, d.table, d.code): d for d in index.docs}
    return index


def _disk_save(path: Path, index: Index) -> None:
    """Write the index for the next process (best effort: a read never fails for a cache it cannot write)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        family = path.name.split("-", 1)[0] + "-"
        for old in path.parent.glob(f"{family}*.marshal"):
            if old != path:  # an older library version of this database
                old.unlink(missing_ok=True)
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
        # One temporary file per process and thread: two workers saving at once never rename a half-written file.
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(_DISK_MAGIC + struct.pack("<II", zlib.crc32(body), len(body)) + body)
        tmp.replace(path)
    except (OSError, ValueError):
        logger.warning("无法写入参考资料检索索引缓存 %s", path, exc_info=True)


# ---------------------------------------------------------------- genre profiles (routing)

ROUTE_NAME = "题材/流派"
# Columns that hold terms (tags), as opposed to prose.
TAG_COLUMNS = frozenset({ROUTE_NAME, "canonical_genre", "题材别名", "关键词", "默认查询词", "意图与同义词", "必选爽点"})
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
# A routing row's genre keys: entries of other tables written for one of these genres feed the
# row's profile.
_ROUTE_KEYS = (ROUTE_NAME, "canonical_genre", "题材别名")


@dataclass
class RouteProfiles:
    """One BM25 document per routing row: the row's own routing columns plus the keyword columns
    of every library entry written for the row's genre. IDF is over the routing rows, so a term
    every genre shares (写法, 主角) weighs nothing and a term one genre owns (入赘, 丧尸) weighs most."""

    rows: list[Doc]
    # term -> [(row index, contribution, field the contribution mostly came from)]
    postings: dict[str, list[tuple[int, float, str]]]
    # thesaurus word -> [(row index, contribution, concept, row column, row term)]: the words of the
    # concepts mapped to a row (see ``thesaurus_map``)
    words: dict[str, list[tuple[int, float, str, str, str]]] = field(default_factory=dict)
    thesaurus: tuple[str, float] = ("", 0.0)
    # the concepts' names among ``words`` (genre names: 虐文, 宫斗 …), and as (name, concept)
    names: frozenset[str] = frozenset()
    named: frozenset[tuple[str, str]] = frozenset()
    # ``words`` as one Aho–Corasick automaton (a route scans the request once, not 2,000 times),
    # and the words holding a negation cue themselves (不要回头: content, not a negation)
    automaton: Any = None
    # the two-character words the library or the thesaurus writes whole (``route_profiles_build``)
    lexicon: frozenset[str] = frozenset()
    guarded: tuple[str, ...] = ()

    def score(
        self, query: str, *, skip: frozenset[str] = frozenset(), scale: dict[str, float] | None = None
    ) -> list[tuple[float, int, list[dict[str, Any]]]]:
        """(score, row index, evidence) for every row sharing a term with ``query``, best first.
        A term in ``skip`` (a request's craft words) counts only for the rows whose profile holds
        it mostly through our thesaurus (释放 is 压抑后爆's own vocabulary, not a craft word there);
        a term in ``scale`` counts that share of its weight.

        Each stretch of the request is evidence once for a row: where a thesaurus word credits the
        row, the profile terms lying inside that word which the row holds through the thesaurus
        (its bigrams, its characters) add nothing more to that row — 我死后 is one clue, not
        我死后 + 我死 + 死后; the library's own columns are another witness and still count. A bigram
        straddling two words (``boundary_fragments``) is no evidence."""
        scores: dict[int, float] = defaultdict(float)
        evidence: dict[int, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
        unigram = float(conf("route_profile_unigram_weight"))
        text = query.lower()
        # row index -> the spans of the request its thesaurus words cover
        covered: dict[int, list[tuple[int, int]]] = defaultdict(list)
        boost = float(conf("route_thesaurus_name_boost"))
        for word, spans in thesaurus_spans(query, self.automaton):
            # a genre's name followed by 文 / 流 / 风 / 类 / 题材 / 小说 names the book's genre (学院文)
            marked = any(_GENRE_MARKER.match(text, b) for _, b in spans)
            for row_idx, contribution, concept, column, row_term in self.words[word]:
                if marked and (word, concept) in self.named:
                    contribution *= boost
                covered[row_idx] += spans
                scores[row_idx] += contribution
                evidence[row_idx].append(
                    (
                        contribution,
                        {"field": THESAURUS_FIELD, "term": word, "match": "thesaurus", "concept": concept}
                        | {"row_field": column, "row_term": row_term},
                    )
                )
        cut = self.boundary_fragments(text)
        for term in profile_terms(query):
            if term in cut:
                continue
            scale_of = (unigram if len(term) == 1 else 1.0) * (scale or {}).get(term, 1.0)
            starts: list[int] | None = None
            for row_idx, contribution, source in self.postings.get(term, ()):
                if term in skip and source != THESAURUS_FIELD:
                    continue
                spans = covered.get(row_idx) if source == THESAURUS_FIELD else None
                if spans:
                    if starts is None:
                        starts = list(_occurrences(text, term))
                    if starts and all(any(a <= i and i + len(term) <= b for a, b in spans) for i in starts):
                        continue
                contribution *= scale_of
                scores[row_idx] += contribution
                evidence[row_idx].append((contribution, {"field": source, "term": term, "match": "profile"}))
        out = []
        for row_idx, total in scores.items():
            top = sorted(evidence[row_idx], key=lambda e: (-e[0], e[1]["term"]))[:8]
            out.append((total, row_idx, [{**e, "score": round(c, 3)} for c, e in top]))
        out.sort(key=lambda h: (-h[0], self.rows[h[1]].library != "seed", self.rows[h[1]].code))
        return out

    def boundary_fragments(self, text: str) -> frozenset[str]:
        """The bigrams of ``text`` that straddle a word boundary: no word themselves, and at every
        place they occur, a word of the lexicon ends on their first character or starts on their
        second (面改 in 位面改写, 统派 in 系统派她). They are no evidence."""
        lexicon = self.lexicon
        cut: dict[str, bool] = {}
        for run in _WORD.findall(text):
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                if bigram in lexicon:
                    continue
                straddles = run[i - 1 : i + 1] in lexicon if i else False
                straddles = straddles or run[i + 1 : i + 3] in lexicon
                cut[bigram] = cut.get(bigram, True) and straddles
        return frozenset(b for b, straddles in cut.items() if straddles)


_GENRE_MARKER = re.compile("文|流|风|类|题材|小说")


# Function characters of written Chinese. Without a segmenter, a bigram holding one mostly spans
# a word boundary (后的, 院里, 就被): in a genre profile such bigrams are noise, not vocabulary.
FUNCTION_CHARS = frozenset(
    "的了着过是在和与及或就被把给对从向于也都又还很太更最个这那些么之其而且但若所为吗呢吧啊呀嘛得地"
)


def profile_terms(text: str) -> list[str]:
    """The distinct terms of ``text`` for a genre profile: the search tokens without the bigrams
    holding a function character, plus, when ``route_profile_unigrams`` is on, single CJK
    characters."""
    terms = [t for t in tokenize(text) if len(t) != 2 or not (set(t) & FUNCTION_CHARS)]
    if conf("route_profile_unigrams"):
        terms += [c for c in text.lower() if _CJK.match(c) and c not in FUNCTION_CHARS]
    return list(dict.fromkeys(terms))


def route_profiles_build(*, docs: list[Doc]) -> RouteProfiles:
    """The genre profiles of the routing rows among ``docs`` (see ``RouteProfiles``)."""
    weights: dict[str, float] = conf("route_profile_weights")
    library_weights: dict[str, float] = conf("route_profile_library_weights")
    k1, b = float(conf("route_profile_k1")), float(conf("route_profile_b"))
    rows = [d for d in docs if ROUTE_NAME in d.payload["fields"]]
    keys = []
    for row in rows:
        fields = row.payload["fields"]
        keys.append({v for name in _ROUTE_KEYS for v in split_multi(fields.get(name, "")) if v != "全部"})
    tf: list[dict[str, float]] = [defaultdict(float) for _ in rows]
    best: list[dict[str, tuple[float, str]]] = [{} for _ in rows]
    # Without a segmenter, a bigram of prose is as often a word boundary (改写|点) as a word: prose
    # columns contribute only the bigrams the library itself uses as a tag somewhere.
    vocabulary = {t for d in docs for cell in (*d.payload["keywords"], *d.payload["intents"]) for t in tokenize(cell)}
    for row in rows:
        for name in TAG_COLUMNS:
            vocabulary.update(tokenize(row.payload["fields"].get(name, "")))

    mapped = [(c, concept_rows(c, rows)) for c in thesaurus_load(thesaurus_path())]
    # The words the library and the thesaurus write whole (a tag, a segment of one, a thesaurus
    # word). A bigram of a thesaurus phrase that is none of them is a fragment spanning two words
    # (到十 of 回到十八岁): it is kept, so a near word still meets it, but weighs as a single
    # character does. At query time a bigram straddling a lexicon word is dropped (boundary_fragments).
    fragment = float(conf("route_profile_unigram_weight"))
    lexicon = {w for c, _ in mapped for w in c.words}
    for d in docs:
        for cell in (*d.payload["keywords"], *d.payload["intents"]):
            lexicon.update(seg for seg in _SPLIT.split(cell.lower()) if seg)
    for row in rows:
        for name in TAG_COLUMNS:
            for cell in split_multi(row.payload["fields"].get(name, "")):
                lexicon.update(seg for seg in _SPLIT.split(cell.lower()) if seg)

    def terms_of(text: str, source: str) -> list[str]:
        terms = profile_terms(text)
        if source.rsplit(".", 1)[-1] in TAG_COLUMNS or source == THESAURUS_FIELD:
            return terms
        return [t for t in terms if len(t) == 1 or t in vocabulary]

    def add(targets: list[int], terms: list[str], weight: float, source: str) -> None:
        for row_idx in targets:
            row_tf, row_best = tf[row_idx], best[row_idx]
            for term in terms:
                # only the thesaurus's phrases are cut into fragments weighed down here: the
                # library's own bigrams keep their weight (its tags are short, mostly one word)
                w = (
                    weight * fragment
                    if source == THESAURUS_FIELD and len(term) == 2 and term not in lexicon
                    else weight
                )
                row_tf[term] += w
                if w > row_best.get(term, (0.0, ""))[0]:
                    row_best[term] = (w, source)

    for row_idx, row in enumerate(rows):
        p = row.payload
        own = {**p["fields"], **p["anti_pattern_cells"], "关键词": "|".join(p["keywords"])}
        own |= {"意图与同义词": "|".join(p["intents"]), "核心摘要": p["summary"], "详细展开": p["detail"]}
        own["大模型指令"] = p["instruction"]
        for name, weight in weights.items():
            for value in split_multi(own.get(name, "")):
                add([row_idx], terms_of(value, name), weight, name)
    for doc in docs:
        if ROUTE_NAME in doc.payload["fields"]:
            continue
        genres = doc.genres - {"全部"}
        targets = [i for i, k in enumerate(keys) if k & genres]
        if not targets:
            continue
        p = doc.payload
        cells = {"关键词": p["keywords"], "意图与同义词": p["intents"], "核心摘要": [p["summary"]]}
        cells |= {"详细展开": [p["detail"]], "大模型指令": [p["instruction"]]}
        for name, weight in library_weights.items():
            source = f"{doc.table}.{name}"
            for value in cells.get(name) or split_multi(p["fields"].get(name, "")):
                add(targets, terms_of(value, name), weight, source)
    # Our thesaurus is vocabulary too: its words join the profile of the rows their concept maps
    # to, so a word it lacks still meets its characters and bigrams (仙途 meets 仙).
    thesaurus_weight = float(weights.get(THESAURUS_FIELD, 0.0))
    if thesaurus_weight:
        for concept, targets in mapped:
            for word in concept.words if targets else ():
                add(
                    [t[0] for t in targets],
                    terms_of(word, THESAURUS_FIELD),
                    thesaurus_weight / len(targets),
                    THESAURUS_FIELD,
                )
    n = len(rows)
    lengths = [sum(t.values()) for t in tf]
    avg = (sum(lengths) / n) if n else 1.0
    df: Counter[str] = Counter(term for t in tf for term in t)
    postings: dict[str, list[tuple[int, float, str]]] = defaultdict(list)
    for row_idx, terms in enumerate(tf):
        norm = 1 - b + b * lengths[row_idx] / (avg or 1.0)
        for term, w in terms.items():
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            postings[term].append((row_idx, idf * w * (k1 + 1) / (w + k1 * norm), best[row_idx][term][1]))
    names = frozenset(n.lower() for c, targets in mapped if targets for n in c.names)
    named = frozenset((n.lower(), c.names[0]) for c, targets in mapped if targets for n in c.names)
    words = thesaurus_map(mapped=mapped)
    automaton = ahocorasick.Automaton()
    for word in words:
        automaton.add_word(word, word)
    if words:
        automaton.make_automaton()
    return RouteProfiles(
        rows=rows,
        postings=dict(postings),
        words=words,
        names=names,
        named=named,
        automaton=automaton if words else None,
        lexicon=frozenset(t for t in lexicon if len(t) == 2),
        guarded=tuple(w for w in words if _NEGATION.search(w)),
    )


def route_profiles_get() -> RouteProfiles:
    """The genre profiles of the current index (built once per library and thesaurus version)."""
    index = index_get()
    path = thesaurus_path()
    try:
        version = (str(path), path.stat().st_mtime)
    except OSError:
        version = (str(path), -1.0)  # thesaurus_load reports it
    if index.profiles is None or index.profiles.thesaurus != version:
        with _lock:
            if index.profiles is None or index.profiles.thesaurus != version:
                index.profiles = route_profiles_build(docs=index.docs)
                index.profiles.thesaurus = version
    return index.profiles


# ---------------------------------------------------------------- the genre thesaurus

THESAURUS_FIELD = "题材词表"
SEED_THESAURUS = Path(__file__).resolve().parent / "seed" / "题材词表.yaml"
# How a concept name matches a routing row, strongest first: equal to a value of the column, or
# (weakest) contained in the row's genre name or an alias (赘婿 in 都市赘婿流).
_NAME_LEVELS = ((ROUTE_NAME, 5), ("题材别名", 4), ("关键词", 3), ("canonical_genre", 2))
_CONTAINED_IN = (ROUTE_NAME, "题材别名")


@dataclass(frozen=True)
class Concept:
    names: tuple[str, ...]
    words: tuple[str, ...]


_thesaurus_cache: dict[tuple[str, float], list[Concept]] = {}


def thesaurus_path() -> Path:
    configured = conf("route_thesaurus")
    return Path(configured) if configured else SEED_THESAURUS


def thesaurus_load(path: Path) -> list[Concept]:
    """The concepts of the thesaurus file at ``path`` (cached per file version). A broken file is
    an ``InvalidInput`` naming the file, and the line or the concept that is wrong."""
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise InvalidInput(f"题材词表 {path} 无法读取：{exc.strerror or exc}", extra={"file": str(path)}) from None
    cached = _thesaurus_cache.get(key)
    if cached is not None:
        return cached
    try:
        # libyaml when present: the pure-Python loader takes ~0.2 s for the seed's 2,000 words
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise InvalidInput(f"题材词表 {path} 不是 UTF-8 文本", extra={"file": str(path)}) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"第 {mark.line + 1} 行" if mark else ""
        raise InvalidInput(
            f"题材词表 {path} {where}不是合法的 YAML：{getattr(exc, 'problem', None) or exc}",
            extra={"file": str(path), "line": mark.line + 1 if mark else None},
        ) from None
    concepts = data.get("concepts") if isinstance(data, dict) else None
    if not isinstance(concepts, list):
        raise InvalidInput(f"题材词表 {path} 缺少 concepts 列表", extra={"file": str(path)})
    out = []
    for i, item in enumerate(concepts):
        names = item.get("names") if isinstance(item, dict) else None
        words = item.get("words", []) if isinstance(item, dict) else None
        if not _str_list(names) or not names or not _str_list(words):
            raise InvalidInput(
                f"题材词表 {path} 的 concepts[{i}] 需要 names（非空的词列表）和 words（词列表）",
                extra={"file": str(path), "path": f"concepts[{i}]"},
            )
        clean = [str(w).strip().lower() for w in (*names, *words)]
        out.append(
            Concept(names=tuple(str(n).strip() for n in names), words=tuple(dict.fromkeys(w for w in clean if w)))
        )
    _thesaurus_cache.clear()
    _thesaurus_cache[key] = out
    return out


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str | int) and not isinstance(v, bool) for v in value)


def concept_rows(concept: Concept, rows: list[Doc]) -> list[tuple[int, str, str]]:
    """The routing rows a concept stands for, as (row index, column, row term): those its names
    match at the strongest level any row reaches (see ``_NAME_LEVELS``)."""
    best, found = 0, []
    for row_idx, row in enumerate(rows):
        fields = row.payload["fields"]
        values = {column: split_multi(fields.get(column, "")) for column, _ in _NAME_LEVELS}
        values["关键词"] = row.payload["keywords"]
        level, where = 0, ("", "")
        for name in concept.names:
            for column, strength in _NAME_LEVELS:
                if strength > level and name in values[column]:
                    level, where = strength, (column, name)
            if level < 1 and len(name) > 1:
                for column in _CONTAINED_IN:
                    hit = next((v for v in values[column] if name in v), None)
                    if hit:
                        level, where = 1, (column, hit)
                        break
        if level and level > best:
            best, found = level, []
        if level and level == best:
            found.append((row_idx, *where))
    return found


def thesaurus_map(
    *, mapped: list[tuple[Concept, list[tuple[int, str, str]]]]
) -> dict[str, list[tuple[int, float, str, str, str]]]:
    """Word -> its contributions to the routing rows. A word weighs more the longer it is (a
    longer phrase is a more specific premise); its weight is shared among the concepts listing
    it, and a concept's among the rows it maps to."""
    scale = float(conf("route_thesaurus_weight"))
    name_boost = float(conf("route_thesaurus_name_boost"))
    listing: Counter[str] = Counter(w for c, targets in mapped if targets for w in c.words)
    words: dict[str, list[tuple[int, float, str, str, str]]] = defaultdict(list)
    for concept, targets in mapped:
        named = {n.lower() for n in concept.names}
        for word in concept.words:
            if not targets:
                continue
            weight = scale * _word_weight(word) / listing[word] / len(targets)
            if word in named:
                weight *= name_boost  # the author named the genre itself (快穿, 赘婿)
            for row_idx, column, row_term in targets:
                words[word].append((row_idx, weight, concept.names[0], column, row_term))
    return dict(words)


def _word_weight(word: str) -> float:
    return {1: 0.5, 2: 1.0, 3: 1.5}.get(len(word), 2.0)


def thesaurus_spans(query: str, automaton: Any) -> list[tuple[str, list[tuple[int, int]]]]:
    """The thesaurus words occurring in ``query``, each with the spans (start, end) of
    ``query.lower()`` it covers: longest first, and a word inside a longer one already matched at
    that place is not counted again (上门 inside 上门女婿)."""
    if automaton is None:
        return []
    found = sorted(
        ((end - len(word) + 1, end + 1, word) for end, word in automaton.iter(query.lower())),
        key=lambda h: (h[0] - h[1], h[0]),
    )
    covered: list[tuple[int, int]] = []
    out: dict[str, list[tuple[int, int]]] = {}
    for start, end, word in found:
        if not any(a <= start and end <= b for a, b in covered):
            covered.append((start, end))
            out.setdefault(word, []).append((start, end))
    return sorted(out.items(), key=lambda w: (-len(w[0]), w[0]))


# ---------------------------------------------------------------- negation

# A cue that negates what follows: 不要虐 asks *against* 虐文. Only an author's preference is
# negated — a genre name, or a genre name's first character standing alone (虐 in 不要太虐了);
# a premise's own negation (他不能修炼, 没有灵根) is content and stays. 特别 and 别人 are no cue.
_NEGATION = re.compile(
    r"(不要|不想|不用|不需要|不能|不可以|(?<![特区级性告离分个类派差识鉴])别(?![人的墅院处样])|拒绝|无需|避免|杜绝|少点)"
)
_NEGATION_REACH = 4
_SEPARATOR = re.compile(r"[\s,，。、；;：:！!？?]")
_INTENSIFIER = re.compile(r"(太|过于|那么|这么|很|要|再|一点|有|任何|是|写|写成|搞|搞成|弄成|变成)+")


def negation_strip(query: str, names: frozenset[str], guarded: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """``query`` with the preferences it negates blanked out, and what was negated: after a cue,
    a genre name within a few characters (别写成虐文), else a genre name's first character
    followed by nothing but a function character or the end (不要虐, 别太甜了). A cue inside a
    thesaurus word (不要回头 of a rule-horror notice) is content, not a negation."""
    text = query.lower()
    spans, negated = [], []
    kept = [(i, i + len(w)) for w in guarded if w in text for i in _occurrences(text, w)]
    initials = {n[0] for n in names if n}
    for cue in _NEGATION.finditer(text):
        if any(a <= cue.start() < b for a, b in (*spans, *kept)):
            continue
        start = cue.end()
        skip = _INTENSIFIER.match(text, start)
        if skip:
            start = skip.end()
        near = [(text.find(n, cue.end(), start + _NEGATION_REACH + len(n)), n) for n in names]
        near = [(i, n) for i, n in near if i >= 0 and not _SEPARATOR.search(text, cue.end(), i)]
        word = ""
        if near:
            i, word = min(near, key=lambda h: (h[0], -len(h[1])))
            start = i
        elif start < len(text) and text[start] in initials:
            after = text[start + 1 : start + 2]
            if not after or after in FUNCTION_CHARS or _SEPARATOR.match(after):
                word = text[start]
        if word:
            spans.append((cue.start(), start + len(word)))
            negated.append(word)
    if not spans:
        return query, []
    out, last = [], 0
    for a, b in spans:
        out += [query[last:a], " "]
        last = b
    out.append(query[last:])
    return "".join(out), negated


def _occurrences(text: str, word: str) -> Iterator[int]:
    start = text.find(word)
    while start >= 0:
        yield start
        start = text.find(word, start + 1)
