"""Episodic retrieval over chapter summaries and scenes: BM25, optionally re-ranked by embeddings.

Why our own BM25: it is thirty lines, and the parts that matter here are ours anyway — Chinese
tokenization and a per-book index cached in-process. Tokenization is the kernel's bigram tokenizer
(kernel/bigrams.py: character bigrams of every CJK run, ASCII words lower-cased) plus each entity name or
alias of two characters or more found in the text as one extra term, so a name query matches whole
names strongly. The names are found with the entities app's alias automaton (entities/mentions.py: one
automaton per book, one cache, one invalidation), all overlapping matches rather than its
leftmost-longest ones.

Scenes: a chapter whose Data Agent extraction was ingested (``entities.Extraction.scenes``) is chunked
along those scenes — one chunk per scene, its summary, place and cast plus its lines of the body — so a
recalled scene is one the agent named, and its cast feeds the ``@name`` terms that on-stage names in the
query match. A chapter without ingested scenes is cut into body slices of about ``SCENE_CHARS``.

Embeddings are optional: when the settings ``WEBNOVEL_EMBEDDINGS_URL`` (an OpenAI-compatible base URL,
e.g. ``http://host:8000/v1``) and ``WEBNOVEL_EMBEDDINGS_MODEL`` are set, BM25's top candidates are
re-ranked by cosine similarity (``WEBNOVEL_EMBEDDINGS_API_KEY`` is sent as a bearer token). Any failure —
unset, unreachable, malformed answer — falls back to BM25 and says so in the pack.
"""

import bisect
import hashlib
import heapq
import json
import logging
import marshal
import math
import threading
import urllib.request
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ahocorasick
from django.conf import settings
from django.db.models import Count, ExpressionWrapper, F, IntegerField, Max, Q, Sum
from django.db.models.functions import Length

from core.models import Book, Chapter
from entities.mentions import Matcher, matcher_get
from entities.models import Entity, Extraction
from kernel.bigrams import ASCII_WORD, bigram_lines, text_bigrams
from kernel.bm25 import IndexFile, length_norm
from kernel.bm25 import idf as bm25_idf
from kernel.bulk import rows_insert
from kernel.recall import semantic_get
from memory.models import Chunk, DerivationStamp
from recall.search import CHAPTER_K, FUSION_WEIGHTS
from recall.windows import WINDOW_CHARS, windows_split

logger = logging.getLogger(__name__)

SCENE_CHARS = WINDOW_CHARS
QUERY_TERMS = 48
MAX_POSTINGS = 40_000
SEGMENT_CHAPTERS = 25  # chapters per BM25 segment (see Segment)
K1 = 1.5
B = 0.75

_index_cache: dict[int, "Bm25Index"] = {}
_names_cache: dict[int, tuple[Matcher, "NameIndex"]] = {}  # book pk → (the entities' matcher it was made from, …)
_lock = threading.Lock()


@dataclass
class NameIndex:
    """Every name of the book's entities: the entities' automaton for scanning text, and name → characters."""

    automaton: "ahocorasick.Automaton | None"  # entities.mentions' automaton: every name, one-character ones too
    characters: dict[str, tuple[int, ...]]  # name → pks of live characters it names
    names: tuple[str, ...]  # the names themselves (two characters or more), sorted: stable across rebuilds
    terms: "ahocorasick.Automaton | None" = None  # the same names alone, each giving its term ``@name``

    def found(self, text: str) -> Iterator[str]:
        """Every name of two characters or more in ``text``, overlapping ones included, in order of
        where they end. A one-character name (他) matches far too much text to be a search term."""
        if self.automaton is None or not text:
            return
        for _, name in self.automaton.iter(text):
            if len(name) > 1:
                yield name

    def name_terms(self, text: str) -> list[str]:
        """``@name`` for each name ``found`` gives, in the same order, from an automaton of the names of
        two characters or more only (the chunks' hot loop: one C iteration per name, no filter, no
        generator; at 3,000 chapters ~840,000 names in 30,000 chunks)."""
        if self.terms is None or not text:
            return []
        return [term for _, term in self.terms.iter(text)]


def name_index(*, book: Book) -> NameIndex:
    """The book's name index, made from the entities app's cached matcher (``entities.mentions.
    matcher_get``) and kept exactly as long as that matcher is: the matcher's invalidation (an Entity
    or Alias saved or deleted, or a change of the names' count or highest id) is the only one."""
    matcher = matcher_get(book=book)
    with _lock:
        cached = _names_cache.get(book.pk)
        if cached is not None and cached[0] is matcher:
            return cached[1]
    live = set(
        Entity.objects.filter(book=book, type=Entity.Type.CHARACTER, archived=False)
        .order_by()
        .values_list("id", flat=True)
    )
    characters: dict[str, tuple[int, ...]] = {}
    for name, entries in matcher.names.items():
        pks = sorted({entry[0] for entry in entries if entry[0] in live})
        if pks:
            characters[name] = tuple(pks)
    names = sorted(n for n in matcher.names if len(n) >= 2)
    terms = None
    if names:
        terms = ahocorasick.Automaton()
        for name in names:
            terms.add_word(name, "@" + name)
        terms.make_automaton()
    index = NameIndex(matcher.automaton if names else None, characters, tuple(names), terms)
    with _lock:
        _names_cache[book.pk] = (matcher, index)
    return index


def text_terms(text: str, *, names: NameIndex | None = None) -> list[str]:
    """Index terms of ``text``: the kernel's bigram terms (CJK bigrams, a lone CJK character as a
    unigram, ASCII words) and ``@name`` for every entity name found."""
    terms = text_bigrams(text)
    if names is not None:
        terms += names.name_terms(text)
    return terms


def chunk_terms(texts: list[str], *, names: NameIndex) -> list[str]:
    """``" ".join(text_terms(text, names=names))`` of each text, the bigrams of the whole batch made at
    once (``kernel.bigrams.bigram_lines``): what a chunk stores in ``Chunk.terms``."""
    out = []
    for text, bigrams in zip(texts, bigram_lines(texts), strict=True):
        parts = [bigrams] if bigrams else []
        words = ASCII_WORD.findall(text)
        if words:
            parts.append(" ".join(words).lower())
        found = names.name_terms(text)
        if found:
            parts.append(" ".join(found))
        out.append(" ".join(parts))
    return out


def scenes_split(body: str) -> list[str]:
    """A chapter body cut into scenes: at explicit scene breaks (***, ---, ◇…), then into pieces of
    about ``SCENE_CHARS`` characters along paragraph boundaries — the recall app's windows, so that a
    scene chunk and its vector are keyed by the same text."""
    return [text for _, text in windows_split(body)]


def scene_chunk_texts(*, scenes: list[dict], body: str) -> list[str]:
    """The chunk texts of a chapter's ingested scenes, in scene ``index`` order: the summary, then
    place and cast, then the scene's body lines (``start_line``..``end_line``, 1-based over the body,
    blank lines dropped) cut to ``SCENE_CHARS`` characters. A scene with nothing to say is left out."""
    lines = (body or "").splitlines()
    texts = []
    # Extraction.scenes is written through the validated schema; a hand-edited row of another shape
    # is read as far as it makes sense rather than failing the whole book's re-indexing.
    scenes = [sc for sc in scenes if isinstance(sc, dict)] if isinstance(scenes, list) else []
    for _, scene in sorted(enumerate(scenes), key=lambda p: (_int(p[1].get("index"), p[0]), p[0])):
        head = []
        summary = str(scene.get("summary") or "").strip()
        if summary:
            head.append(summary)
        where = str(scene.get("location") or "").strip()
        cast_raw = scene.get("characters")
        cast = [str(c).strip() for c in cast_raw if str(c).strip()] if isinstance(cast_raw, list) else []
        meta = "；".join(
            part for part in (f"地点：{where}" if where else "", f"人物：{'、'.join(cast)}" if cast else "") if part
        )
        if meta:
            head.append(f"（{meta}）")
        start, end = _int(scene.get("start_line"), 0), _int(scene.get("end_line"), 0)
        excerpt = ""
        if 1 <= start <= end:
            excerpt = "\n".join(line.strip() for line in lines[start - 1 : end] if line.strip())
            if len(excerpt) > SCENE_CHARS:
                excerpt = excerpt[:SCENE_CHARS] + "……"
        text = "\n".join(head + ([excerpt] if excerpt else []))
        if text:
            texts.append(text)
    return texts


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _scenes_fingerprint(scenes: list[dict] | None) -> str:
    if not scenes:
        return ""
    return hashlib.sha1(json.dumps(scenes, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:20]


def _chapter_stamp(
    *, content_hash: str, summary: str | None, body: str | None, names: NameIndex, scenes: list[dict] | None = None
) -> str:
    """What a chapter's chunks were built from: the chapter file and the chapter's ingested scenes (a
    chapter without scenes keeps the stamp it always had). The book's names, which the ``@name`` terms
    come from, are not in it: they are recorded once for the book (``DerivationStamp.names``), and a
    change of them remakes only the chunks whose text holds a name added or removed (``chunks_index``)."""
    base = content_hash or hashlib.sha1(f"{summary}\x1f{body}".encode()).hexdigest()
    extra = _scenes_fingerprint(scenes)
    return hashlib.sha1(f"{base}{'|' + extra if extra else ''}".encode()).hexdigest()[:20]


NAMES_MOVED_MAX = 200  # more names added or removed at once than this: every chapter is remade


def _chapters_holding(*, book: Book, names: set[str]) -> set[int]:
    """The chapters with a chunk whose text holds one of ``names`` (a plain substring: exactly where
    the automaton finds them, all overlapping matches counted; SQLite's LIKE also folds ASCII case,
    a superset, which only remakes a chunk the same)."""
    found: set[int] = set()
    ordered = sorted(names)
    for start in range(0, len(ordered), 50):
        q = Q()
        for name in ordered[start : start + 50]:
            q |= Q(text__contains=name)
        found.update(Chunk.objects.filter(book=book).filter(q).order_by().values_list("chapter", flat=True).distinct())
    return found


def chunks_index(*, book: Book, chapters: list[int], full: bool = False) -> int:
    """(Re)build the retrieval chunks of ``chapters`` (``full``: of the whole book). A chapter whose
    file is unchanged since its chunks were built is skipped, so re-indexing a rebuilt book costs only
    what changed. When the book's names moved since the chunks were indexed (a new entity, an alias),
    the chapters whose chunks hold a name added or removed are remade too, wherever they are — the
    terms of every other chunk are what the new names give already. Returns the book's chunk count
    (``full``), else how many chapters had their chunks remade."""
    names = name_index(book=book)
    current = set(names.names)
    recorded = DerivationStamp.objects.filter(book=book).values_list("names", flat=True).first()
    moved: set[int] = set()
    if recorded is None or len(current ^ set(recorded)) > NAMES_MOVED_MAX:
        full = True  # what the chunks were made with is unknown (an older database): remake them all
        remake_all = Chunk.objects.filter(book=book).exists()
    else:
        remake_all = False
        if current != set(recorded):
            moved = _chapters_holding(book=book, names=current ^ set(recorded))
    rows = Chapter.objects.filter(book=book)
    if not full:
        rows = rows.filter(number__in=set(chapters) | moved)
    built = dict(
        Chunk.objects.filter(book=book)
        .filter(**({} if full else {"chapter__in": set(chapters) | moved}))
        .values_list("chapter", "source_hash")
        .distinct()
    )
    present = dict(rows.values_list("number", "content_hash"))
    extractions = Extraction.objects.filter(book=book)
    if not full:
        extractions = extractions.filter(chapter__in=set(chapters) | moved)
    scenes = {n: sc for n, sc in extractions.values_list("chapter", "scenes") if sc and n in present}
    gone = [n for n in built if n not in present]
    if gone:
        Chunk.objects.filter(book=book, chapter__in=gone).delete()
    todo = [
        n
        for n, h in present.items()
        if remake_all
        or n in moved
        or not h
        or built.get(n) != _chapter_stamp(content_hash=h, summary=None, body=None, names=names, scenes=scenes.get(n))
    ]
    for start in range(0, len(todo), 500):
        part = sorted(todo[start : start + 500])
        Chunk.objects.filter(book=book, chapter__in=part).delete()
        rows = []
        for number, content_hash, summary, body in (
            Chapter.objects.filter(book=book, number__in=part)
            .order_by("number")
            .values_list("number", "content_hash", "summary", "body")
        ):
            stamp = _chapter_stamp(
                content_hash=content_hash, summary=summary, body=body, names=names, scenes=scenes.get(number)
            )
            pieces = [(Chunk.Kind.SUMMARY.value, 0, summary.strip())] if summary.strip() else []
            # The Data Agent's scenes when the chapter's extraction has them, else body slices.
            parts = scene_chunk_texts(scenes=scenes[number], body=body) if number in scenes else []
            pieces += [(Chunk.Kind.SCENE.value, i, scene) for i, scene in enumerate(parts or scenes_split(body))]
            rows += [
                {
                    "book_id": book.pk,
                    "chapter": number,
                    "kind": kind,
                    "order": order,
                    "text": text,
                    "terms": "",
                    "source_hash": stamp,
                }
                for kind, order, text in pieces
            ]
        for row, terms in zip(rows, chunk_terms([row["text"] for row in rows], names=names), strict=True):
            row["terms"] = terms
        rows_insert(Chunk, rows)
    if recorded is None or current != set(recorded):
        DerivationStamp.objects.update_or_create(book=book, defaults={"names": sorted(current)})
    if not full:
        # a finalize / sync of a few chapters: how many chapters were remade, not a count over every
        # chunk of the book (the after-chapter hook ignores it; the cost must not grow with the book)
        return len(todo)
    return Chunk.objects.filter(book=book).count()


@dataclass
class Segment:
    """The BM25 postings of one range of chapters (``SEGMENT_CHAPTERS`` of them): rebuilt alone when
    that range's chunks change, so an ingestion or a finalize re-indexes 25 chapters, not the book.
    Documents are numbered within the segment in (chapter, kind, order) order; posting lists are
    arrays (compact, and invisible to the garbage collector, which would otherwise walk millions of
    list items on every full collection)."""

    number: int
    stamp: tuple[int, int]  # (chunk count, highest chunk id) of the range
    ids: list[int]
    chapters: list[int]
    kinds: list[str]
    orders: list[int]
    lengths: list[int]
    postings: dict[str, tuple[array, array]]  # term -> (local documents, term frequencies)


class Bm25Index:
    """The book's segments end to end: a document's global number is its segment's offset plus its
    local number, so documents stay in (chapter, kind, order) order and a search up to chapter N
    stops at a bisection. Statistics (document count, document frequency, average length) are over
    the whole book, so a score does not depend on how the book is cut into segments."""

    def __init__(self, segments: list[Segment]):
        self.segments = segments
        self.stamp = tuple(s.stamp for s in segments)
        self.ids: list[int] = []
        self.chapters: list[int] = []
        self.kinds: list[str] = []
        self.orders: list[int] = []
        self.offsets: list[int] = []
        lengths: list[int] = []
        for seg in segments:
            self.offsets.append(len(self.ids))
            self.ids += seg.ids
            self.chapters += seg.chapters
            self.kinds += seg.kinds
            self.orders += seg.orders
            lengths += seg.lengths
        avgdl = (sum(lengths) / len(lengths)) if lengths else 1.0
        avgdl = avgdl or 1.0
        self.norms = [K1 * length_norm(length, avgdl, B) for length in lengths]  # per document

    def _postings(self, term: str, end: int) -> list[tuple[int, array, array, int]]:
        """(offset, local docs, tfs, how many local docs are < end) of every segment holding ``term``."""
        out = []
        for seg, offset in zip(self.segments, self.offsets, strict=True):
            posting = seg.postings.get(term)
            if posting is not None:
                out.append((offset, posting[0], posting[1], bisect.bisect_left(posting[0], end - offset)))
        return out

    def search(
        self, terms: list[str], *, max_chapter: int, exclude: set[tuple[int, str]], limit: int
    ) -> list[tuple[int, float]]:
        """(doc index, score) of the best documents from chapters ≤ max_chapter, best first;
        ties go to the later chapter, then the lower chunk order (deterministic). Only the
        ``QUERY_TERMS`` most informative query terms are scored: a long query (an outline plus
        summaries) is mostly common bigrams that cost time and do not change the ranking."""
        n = len(self.ids)
        if n == 0:
            return []
        end = bisect.bisect_right(self.chapters, max_chapter)
        skip: set[int] = set()
        if exclude:
            lo = bisect.bisect_left(self.chapters, min(c for c, _ in exclude))
            skip = {d for d in range(lo, end) if (self.chapters[d], self.kinds[d]) in exclude}
        weights = []
        for term, qtf in Counter(terms).items():
            parts = self._postings(term, end)
            if not any(stop for *_, stop in parts):
                continue  # not in any chapter up to max_chapter
            df = sum(len(docs) for _, docs, _, _ in parts)
            idf = bm25_idf(n, df)
            weights.append((-idf, term, qtf, idf, parts))
        weights.sort(key=lambda w: w[:2])
        scores: dict[int, float] = {}
        scanned = 0
        norms = self.norms
        for _, _, qtf, idf, parts in weights[:QUERY_TERMS]:
            stop = sum(p[3] for p in parts)
            if scores and scanned + stop > MAX_POSTINGS:
                break  # the rarest terms are scored first; the common rest barely moves the ranking
            scanned += stop
            w = idf * qtf * (K1 + 1)
            for offset, docs, tfs, local_stop in parts:
                for i in range(local_stop):
                    doc = offset + docs[i]
                    if doc in skip:
                        continue
                    tf = tfs[i]
                    scores[doc] = scores.get(doc, 0.0) + w * tf / (tf + norms[doc])
        if not scores:
            return []
        # Cut at the limit-th best score first (cheap), then order the survivors with the full tie-break.
        floor = heapq.nlargest(limit, scores.values())[-1] - 1e-9
        best = sorted(
            ((d, v) for d, v in scores.items() if v >= floor),
            key=lambda kv: (-round(kv[1], 9), -self.chapters[kv[0]], self.kinds[kv[0]], self.orders[kv[0]]),
        )
        return best[:limit]


# Segments on disk (kernel/bm25.py's file cache), in the folder of ``WEBNOVEL_MEMORY_INDEX_DIR`` (default
# var/memory-index; None keeps them in memory only, as the tests do: test databases reuse ids from run to run).
_DISK = IndexFile(setting="WEBNOVEL_MEMORY_INDEX_DIR", kind="memory", magic=b"WNMEMIX1", label="检索索引缓存")


def _segment_stamps(*, book: Book) -> dict[int, tuple[int, int]]:
    """(chunk count, highest chunk id) of every segment that has chunks: one grouped query."""
    rows = (
        Chunk.objects.filter(book=book)
        .annotate(seg=ExpressionWrapper(F("chapter") / SEGMENT_CHAPTERS, output_field=IntegerField()))
        .order_by()
        .values("seg")
        .annotate(n=Count("id"), m=Max("id"))
        .values_list("seg", "n", "m")
    )
    return {seg: (n, m) for seg, n, m in rows}


def _segment_path(*, book: Book, number: int, stamp: tuple[int, int], size: int) -> Path | None:
    """The file of one segment: named by the database, book and segment (the name every version of that
    segment shares, so a new version replaces the old file), then its chunk count, highest id and the
    total length of its terms (guards against a database recreated with the same ids, e.g. a flush)."""
    return _DISK.path(book.pk, SEGMENT_CHAPTERS, number, version=(stamp, size))


def _segment_disk_load(path: Path, number: int, stamp: tuple[int, int]) -> Segment | None:
    body = _DISK.read(path)
    if body is None:
        return None
    try:
        ids, chapters, kinds, orders, lengths, raw = marshal.loads(body)
        postings = {}
        for term, (docs, tfs) in raw.items():
            a, b = array("i"), array("i")
            a.frombytes(docs)
            b.frombytes(tfs)
            postings[term] = (a, b)
    except (ValueError, EOFError, TypeError, AttributeError):
        _DISK.damaged(path)
        return None
    return Segment(number, stamp, ids, chapters, kinds, orders, lengths, postings)


def _segment_disk_save(path: Path, seg: Segment) -> None:
    raw = {term: (docs.tobytes(), tfs.tobytes()) for term, (docs, tfs) in seg.postings.items()}
    _DISK.write(path, marshal.dumps((seg.ids, seg.chapters, seg.kinds, seg.orders, seg.lengths, raw)))


def bm25_index(*, book: Book) -> Bm25Index:
    """The book's BM25 index: cached in-process per segment until that segment's chunks change (count
    or highest id), and on disk so that a fresh process (a ``context`` command) loads the segments
    instead of rebuilding them."""
    stamps = _segment_stamps(book=book)
    with _lock:
        cached = _index_cache.get(book.pk)
    if cached is not None and cached.stamp == tuple(stamps[n] for n in sorted(stamps)):
        return cached
    have = {seg.number: seg for seg in cached.segments} if cached is not None else {}
    on_disk = _DISK.folder() is not None
    segments = []
    for number in sorted(stamps):
        seg = have.get(number)
        if seg is not None and seg.stamp == stamps[number]:
            segments.append(seg)
            continue
        path = None
        if on_disk:
            first = number * SEGMENT_CHAPTERS
            size = (
                Chunk.objects.filter(book=book, chapter__gte=first, chapter__lt=first + SEGMENT_CHAPTERS).aggregate(
                    t=Sum(Length("terms"))
                )["t"]
                or 0
            )
            path = _segment_path(book=book, number=number, stamp=stamps[number], size=size)
        seg = _segment_disk_load(path, number, stamps[number]) if path is not None else None
        if seg is None:
            seg = _segment_build(book=book, number=number, stamp=stamps[number])
            if path is not None:
                _segment_disk_save(path, seg)
        segments.append(seg)
    index = Bm25Index(segments)
    with _lock:
        _index_cache[book.pk] = index
    return index


def _segment_build(*, book: Book, number: int, stamp: tuple[int, int]) -> Segment:
    ids, chapters, kinds, orders, lengths = [], [], [], [], []
    postings: dict[str, tuple[array, array]] = {}
    first = number * SEGMENT_CHAPTERS
    rows = (
        Chunk.objects.filter(book=book, chapter__gte=first, chapter__lt=first + SEGMENT_CHAPTERS)
        .order_by("chapter", "kind", "order")
        .values_list("id", "chapter", "kind", "order", "terms")
    )
    for doc, (pk, chapter, kind, order, terms) in enumerate(rows.iterator(chunk_size=2000)):
        toks = terms.split()
        ids.append(pk)
        chapters.append(chapter)
        kinds.append(kind)
        orders.append(order)
        lengths.append(len(toks))
        for term, tf in Counter(toks).items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = (array("i", (doc,)), array("i", (tf,)))
            else:
                posting[0].append(doc)
                posting[1].append(tf)
    return Segment(number, stamp, ids, chapters, kinds, orders, lengths, postings)


# --- embeddings ----------------------------------------------------------------------------------

_embedding_cache: dict[tuple[str, str], list[float]] = {}


def embeddings_config() -> dict[str, str] | None:
    """The embeddings endpoint of the settings (``WEBNOVEL_EMBEDDINGS_*``), or None when it is not set."""
    url = (settings.WEBNOVEL_EMBEDDINGS_URL or "").strip()
    model = (settings.WEBNOVEL_EMBEDDINGS_MODEL or "").strip()
    if not url or not model:
        return None
    return {"url": url.rstrip("/"), "model": model, "key": settings.WEBNOVEL_EMBEDDINGS_API_KEY or ""}


def embed_texts(texts: list[str], *, config: dict[str, str]) -> list[list[float]]:
    """Vectors of ``texts`` from the OpenAI-compatible ``/embeddings`` endpoint (cached by text)."""
    missing = [t for t in dict.fromkeys(texts) if (config["model"], t) not in _embedding_cache]
    if missing:
        body = json.dumps({"model": config["model"], "input": missing}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if config["key"]:
            headers["Authorization"] = f"Bearer {config['key']}"
        request = urllib.request.Request(f"{config['url']}/embeddings", data=body, headers=headers, method="POST")
        timeout = float(settings.WEBNOVEL_EMBEDDINGS_TIMEOUT)
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 — URL set by the operator
            payload = json.loads(response.read().decode("utf-8"))
        data = sorted(payload["data"], key=lambda d: d.get("index", 0))
        if len(data) != len(missing):
            raise ValueError(f"embeddings: asked {len(missing)} vectors, got {len(data)}")
        for text, item in zip(missing, data, strict=True):
            _embedding_cache[(config["model"], text)] = [float(x) for x in item["embedding"]]
    return [_embedding_cache[(config["model"], t)] for t in texts]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(y * y for y in b)) or 1.0
    return dot / (na * nb)


RRF_K = 60  # the facts' fusion (memory.fact_recall): a fact has no chapter to fuse by


def _hybrid(
    *, book: Book, query: str, max_chapter: int, exclude: set[tuple[int, str]], index, pool
) -> list[dict] | str | None:
    """BM25's pool fused with the recall app's vector ranking per chapter (``chunks_fuse_by_chapter``), as
    chunks; None when the book has no vectors (BM25 alone, as before), a "bm25（…）" method naming a failure."""
    provider = semantic_get()
    if provider is None:
        return None
    ok, _ = provider.status(book=book)
    if not ok:
        return None
    try:
        found = provider.search(book=book, query=query, mode="semantic", limit=len(pool) or 40, max_chapter=max_chapter)
    except Exception as exc:  # noqa: BLE001 — the vectors are optional: BM25 answers, and says so
        logger.warning("向量检索失败，回退到 BM25：%s", exc)
        return f"bm25（向量检索失败，已回退：{type(exc).__name__}）"
    wanted = {
        (h["chapter"], h["kind"], h["order"]): h["text"] for h in found if (h["chapter"], h["kind"]) not in exclude
    }
    rows = {}
    if wanted or pool:
        chapters = {c for c, _, _ in wanted} | {index.chapters[d] for d, _ in pool}
        for pk, chapter, kind, order, text in Chunk.objects.filter(book=book, chapter__in=chapters).values_list(
            "id", "chapter", "kind", "order", "text"
        ):
            rows[pk] = (chapter, kind, order, text)
    by_place = {(c, k, o): pk for pk, (c, k, o, text) in rows.items() if wanted.get((c, k, o)) == text}
    rankings = {"bm25": [index.ids[d] for d, _ in pool], "semantic": [by_place[p] for p in wanted if p in by_place]}
    best = chunks_fuse_by_chapter(rankings, rows)
    return [
        {
            "chunk_id": pk,
            "chapter": rows[pk][0],
            "kind": rows[pk][1],
            "order": rows[pk][2],
            "score": round(score, 4),
            "rank": rank,
            "text": rows[pk][3],
        }
        for rank, (pk, score) in enumerate(best)
    ]


def chunks_fuse_by_chapter(rankings: dict[str, list[int]], rows: dict) -> list[tuple[int, float]]:
    """(chunk pk, its chapter's score) fused per chapter as the ``search`` read fuses (recall.search's
    ``_fuse_chapters``, the same constants): each signal of ``rankings`` (chunk pks, best first) ranks the
    chapters by their best chunk, a chapter scores Σ weight / (``CHAPTER_K`` + rank + 1), and its chunks are
    ordered by the same fusion among themselves. The best chunk of every chapter comes first, chapters best
    first (ties: the later chapter), then each chapter's next one: a pack recalls several chapters before it
    quotes one twice. ``rows``: pk -> (chapter, kind, order, …)."""
    chapter_score: dict[int, float] = {}
    inner: dict[int, float] = {}
    for signal, ranking in rankings.items():
        weight = FUSION_WEIGHTS[signal]
        chapter_rank: dict[int, int] = {}
        found_in: dict[int, int] = {}  # chapter -> chunks of it this signal ranked so far
        for pk in ranking:
            chapter = rows[pk][0]
            if chapter not in chapter_rank:
                chapter_rank[chapter] = len(chapter_rank)
                chapter_score[chapter] = chapter_score.get(chapter, 0.0) + weight / (CHAPTER_K + len(chapter_rank))
            own = found_in.get(chapter, 0)
            found_in[chapter] = own + 1
            inner[pk] = inner.get(pk, 0.0) + weight / (CHAPTER_K + own + 1)
    chunks: dict[int, list[int]] = {}
    for pk in sorted(inner, key=lambda pk: (-round(inner[pk], 9), rows[pk][2])):
        chunks.setdefault(rows[pk][0], []).append(pk)
    chapters = sorted(chapter_score, key=lambda c: (-round(chapter_score[c], 9), -c))
    out = []
    for depth in range(max((len(v) for v in chunks.values()), default=0)):
        out += [(chunks[c][depth], round(chapter_score[c], 6)) for c in chapters if depth < len(chunks[c])]
    return out


def chunks_search(
    *, book: Book, query: str, max_chapter: int, exclude: set[tuple[int, str]] | None = None, limit: int = 8
) -> tuple[list[dict], str]:
    """The best chunks for ``query`` from chapters ≤ ``max_chapter`` (minus the ``exclude``d
    (chapter, kind) pairs, e.g. summaries already in the pack), and the method used
    (``bm25`` or ``embeddings`` or ``bm25（…回退原因）``)."""
    index = bm25_index(book=book)
    terms = text_terms(query, names=name_index(book=book))
    pool = index.search(terms, max_chapter=max_chapter, exclude=exclude or set(), limit=max(limit * 5, 40))
    method = "bm25"
    config = embeddings_config()
    if config is None:
        fused = _hybrid(
            book=book, query=query, max_chapter=max_chapter, exclude=exclude or set(), index=index, pool=pool
        )
        if isinstance(fused, str):
            method = fused
        elif fused is not None:
            return fused[:limit], "hybrid（BM25 + 向量，倒数排名融合）"
    texts = {}
    if pool:
        texts = dict(Chunk.objects.filter(pk__in=[index.ids[d] for d, _ in pool]).values_list("id", "text"))
    if config is not None and pool:
        try:
            vectors = embed_texts([query] + [texts[index.ids[d]] for d, _ in pool], config=config)
            qv = vectors[0]
            rescored = [(d, _cosine(qv, v)) for (d, _), v in zip(pool, vectors[1:], strict=True)]
            pool = sorted(rescored, key=lambda kv: (-round(kv[1], 9), -index.chapters[kv[0]], index.orders[kv[0]]))
            method = "embeddings"
        except Exception as exc:  # noqa: BLE001 — any failure of the optional endpoint falls back to BM25
            logger.warning("嵌入检索失败，回退到 BM25：%s", exc)
            method = f"bm25（嵌入失败，已回退：{type(exc).__name__}）"
    results = []
    for rank, (doc, score) in enumerate(pool[:limit]):
        results.append(
            {
                "chunk_id": index.ids[doc],
                "chapter": index.chapters[doc],
                "kind": index.kinds[doc],
                "order": index.orders[doc],
                "score": round(score, 4),
                "rank": rank,
                "text": texts.get(index.ids[doc], ""),
            }
        )
    return results, method
