"""Semantic and hybrid recall over a book's chapters: vectors, BM25 and their reciprocal-rank fusion.

A book's index is built in-process from its chapter rows (the windows of ``recall.windows``), their
vectors looked up in the store by text hash, and a BM25 over the same windows (the kernel's bigram
tokenizer, postings packed in one sorted numpy array). When a chapter's content hash changes, only that
chapter is read and cut again: the other chapters' windows are kept, their postings renumbered in place
and the new chapter's merged in, the vectors looked up again (a dictionary look-up per window). A window
whose vector is not made yet (the after-chapter hook failed, the book was never embedded) is still
found by BM25; ``coverage`` says how many have vectors.

Hybrid is reciprocal-rank fusion (k = 60, the usual constant): each signal ranks the windows on its
own, a window scores Σ 1 / (60 + rank) over the signals that found it, so neither signal's scale has
to be calibrated against the other's. Answers keep the best window of each chapter.
"""

import hashlib
import math
import threading
from array import array
from dataclasses import dataclass, field

from django.db import connection

from core.models import Book, Chapter
from kernel.bigrams import text_bigrams
from recall import vectors
from recall import windows as recall_windows
from recall.windows import Window, chapter_windows

RRF_K = 60
POOL = 200  # windows (window fusion) or chapters (chapter fusion) each signal contributes
FUSION = "chapter"
CHAPTER_K = 20
FUSION_WEIGHTS = {"semantic": 1.0, "bm25": 2.0}
K1, B = 1.5, 0.75
# A BM25 posting packed in one int64: term id (23 bits) << 40 | window (24 bits) << 16 | term frequency (16 bits),
# kept sorted, so a term's postings are one slice and a changed chapter's are spliced in place.
DOC_SHIFT, TF_MASK, DOC_MASK = 16, 0xFFFF, 0xFFFFFF
TERM_SHIFT = 40
_lock = threading.Lock()
_build_lock = threading.Lock()
_indexes: dict[int, "BookIndex"] = {}
_vocabs: dict[int, dict[str, int]] = {}
_query_vectors: dict[str, object] = {}
_QUERY_CACHE = 256


@dataclass
class ChapterPart:
    """One chapter's windows and their vector keys, kept across index generations while its hash holds."""

    content_hash: str
    windows: list[Window]
    keys: list[str]


@dataclass
class BookIndex:
    stamp: str
    parts: dict[int, ChapterPart]
    windows: list[Window]
    chapters: object  # numpy int array: the chapter of each window
    starts: dict[int, int]  # chapter -> its first window
    matrix: object  # (distinct vectors, 384) float32
    window_row: object  # the matrix row of each window, -1 without a vector
    with_vector: int = 0
    store_size: int = 0  # how many vectors the store held when they were looked up
    vocab: dict[str, int] = field(default_factory=dict)
    postings: object = None  # sorted packed int64 (see TERM_SHIFT)
    post_start: object = None
    doc_norm: object = None
    lengths: object = None

    @property
    def coverage(self) -> tuple[int, int]:
        return self.with_vector, len(self.windows)


def _book_rows(book: Book) -> list[tuple[int, str]]:
    """What the book's chapters are now, checked on every search: (number, content hash) of each, read from
    the index ``chapter_hash_idx`` with a plain cursor (the ORM's rows cost more than the query)."""
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT number, content_hash FROM {Chapter._meta.db_table} WHERE book_id = %s ORDER BY number", [book.pk]
        )
        return cur.fetchall()


def _stamp(rows: list[tuple[int, str]]) -> str:
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def book_windows(*, book: Book, numbers: list[int] | None = None) -> list[Window]:
    """The windows of ``numbers`` (None: every chapter) of ``book``, in chapter order."""
    return [w for part in _parts_read(book=book, numbers=numbers).values() for w in part.windows]


def _parts_read(*, book: Book, numbers) -> dict[int, ChapterPart]:
    rows = Chapter.objects.filter(book=book).order_by("number")
    if numbers is not None:
        rows = rows.filter(number__in=list(numbers))
    out: dict[int, ChapterPart] = {}
    fields = ("number", "content_hash", "summary", "body")
    scheme = recall_windows.SCHEME
    cache = vectors.digest_cache() if recall_windows.digest_costly(scheme) and vectors.status()[0] else None
    fresh: dict[str, list[str]] = {}
    for number, content_hash, summary, body in rows.values_list(*fields).iterator(chunk_size=200):
        if cache is None:
            windows = chapter_windows(number=number, summary=summary, body=body)
        else:
            key, made = recall_windows.digests_key(body or "", scheme), []
            windows = chapter_windows(
                number=number, summary=summary, body=body, digests=cache.get(key), digests_out=made
            )
            if cache.get(key) != made:
                fresh[key] = made
        out[number] = ChapterPart(content_hash, windows, [w.key for w in windows])
    if fresh:
        cache.put(fresh)
    return out


def _window_postings(windows: list[Window], first: int, vocab: dict[str, int], np):
    """(packed postings, lengths) of ``windows`` numbered from ``first``."""
    packed, lengths = array("q"), array("i")
    for doc, window in enumerate(windows, start=first):
        counts: dict[int, int] = {}
        terms = text_bigrams(window.text)
        for term in terms:
            tid = vocab.setdefault(term, len(vocab))
            counts[tid] = counts.get(tid, 0) + 1
        lengths.append(len(terms))
        base = doc << DOC_SHIFT
        packed.extend((tid << TERM_SHIFT) | base | min(tf, TF_MASK) for tid, tf in counts.items())
    return np.frombuffer(packed, dtype=np.int64), np.frombuffer(lengths, dtype=np.int32)


def _bm25_finish(index: BookIndex, postings, lengths, np) -> None:
    index.postings = postings
    index.lengths = lengths
    lens = lengths.astype(np.float32)
    index.doc_norm = K1 * (1 - B + B * lens / max(float(lens.mean()) if len(lens) else 1.0, 1.0))
    # last: a reader that sees the postings' start sees every array they need
    bounds = np.arange(len(index.vocab) + 1, dtype=np.int64) << TERM_SHIFT
    index.post_start = np.searchsorted(postings, bounds)


def _bm25_build(index: BookIndex, np) -> None:
    postings, lengths = _window_postings(index.windows, 0, index.vocab, np)
    postings.sort()  # in place, over the array's own buffer: no second copy of millions of postings
    _bm25_finish(index, postings, lengths, np)


def _bm25_update(index: BookIndex, prev: BookIndex, np) -> None:
    """The postings of ``index`` from ``prev``'s: the windows of the chapters both share are renumbered
    (one shift per chapter, which keeps them sorted), those of gone or changed chapters dropped, the new
    chapters' postings merged in — no chapter but the changed ones is read again."""
    shift = np.zeros(len(prev.windows) + 1, dtype=np.int64)
    alive = np.zeros(len(prev.windows) + 1, dtype=bool)  # False: the window's chapter changed or went
    lengths = np.zeros(len(index.windows), dtype=np.int32)
    fresh = []
    for number, part in index.parts.items():
        start, size = index.starts[number], len(part.windows)
        if prev.parts.get(number) is part:
            old = prev.starts[number]
            shift[old : old + size] = start - old
            alive[old : old + size] = True
            lengths[start : start + size] = prev.lengths[old : old + size]
        else:
            packed, lens = _window_postings(part.windows, start, index.vocab, np)
            fresh.append(packed)
            lengths[start : start + size] = lens
    old = prev.postings
    docs = (old >> DOC_SHIFT) & DOC_MASK
    kept = alive[docs]
    moved = old[kept] + (shift[docs[kept]] << DOC_SHIFT)
    if fresh:
        new = np.sort(np.concatenate(fresh))
        moved = np.insert(moved, np.searchsorted(moved, new), new)
    _bm25_finish(index, moved, lengths, np)


def _vectors_attach(index: BookIndex, store, np) -> None:
    rows: dict[str, int] = {}
    window_row = np.full(len(index.windows), -1, dtype=np.int32)
    i = 0
    for part in index.parts.values():
        for key in part.keys:
            if key in store.index:
                window_row[i] = rows.setdefault(key, len(rows))
            i += 1
    index.window_row = window_row
    index.store_size = len(store.index)
    index.with_vector = int((window_row >= 0).sum())
    index.matrix = store.matrix(list(rows)) if rows else np.zeros((0, vectors.DIMENSIONS), np.float32)


def book_index(*, book: Book) -> BookIndex:
    """The book's recall index. A chapter that changed since the last one was built is read again, alone:
    the other chapters' windows are kept, their BM25 postings renumbered, their vectors looked up again."""
    import numpy as np  # noqa: PLC0415 — numpy comes with the model package (recall is off without it)

    rows = _book_rows(book)
    stamp = _stamp(rows)
    store = vectors.store_get()
    store.refresh()
    with _lock:
        cached = _indexes.get(book.pk)
    if cached is not None and cached.stamp == stamp:
        if cached.with_vector == len(cached.windows) or not _vectors_grew(cached, store):
            return cached
    with _build_lock:
        with _lock:
            cached = _indexes.get(book.pk)
        if cached is not None and cached.stamp == stamp:
            if cached.with_vector < len(cached.windows) and _vectors_grew(cached, store):
                _vectors_attach(cached, store, np)  # the windows are the same: only their vectors arrived
            return cached
        old = cached.parts if cached is not None else {}
        keep = {n: old[n] for n, h in rows if n in old and old[n].content_hash == h}
        read = _parts_read(book=book, numbers=None if not keep else [n for n, _ in rows if n not in keep])
        parts = {n: keep.get(n) or read[n] for n, _ in rows if n in keep or n in read}
        windows: list[Window] = []
        starts: dict[int, int] = {}
        for number, part in parts.items():
            starts[number] = len(windows)
            windows += part.windows
        index = BookIndex(
            stamp=stamp,
            parts=parts,
            windows=windows,
            chapters=np.asarray([w.chapter for w in windows], dtype=np.int32),
            starts=starts,
            matrix=None,
            window_row=None,
            vocab=_vocab_get(book.pk),
        )
        _vectors_attach(index, store, np)
        fresh_vocab = not index.vocab
        if cached is not None and cached.post_start is not None and not fresh_vocab and len(windows) < (1 << 24):
            _bm25_update(index, cached, np)  # the previous index answered BM25: keep its postings warm
        with _lock:
            _indexes[book.pk] = index
        return index


def _vocab_get(book_pk: int) -> dict[str, int]:
    """The book's term ids, shared by its index generations (an update keeps the ids of its postings);
    started over, with a full BM25 build, before the ids outgrow their 23 bits."""
    vocab = _vocabs.get(book_pk)
    if vocab is None or len(vocab) > (1 << 23) - (1 << 20):
        vocab = _vocabs[book_pk] = {}
    return vocab


def _vectors_grew(index: BookIndex, store) -> bool:
    """Whether the store now holds a vector for a window of ``index`` that had none."""
    if len(store.index) == index.store_size:
        return False
    missing = (index.window_row < 0).nonzero()[0]
    keys = [k for part in index.parts.values() for k in part.keys]
    return any(keys[i] in store.index for i in missing)


def _query_vector(query: str):
    vector = _query_vectors.get(query)
    if vector is None:
        vector = vectors.query_embed(query)
        if len(_query_vectors) >= _QUERY_CACHE:
            _query_vectors.pop(next(iter(_query_vectors)))
        _query_vectors[query] = vector
    return vector


def _top(scores, np):
    """The indexes of the ``POOL`` best scores, best first (ties: the lower index), without sorting all."""
    if len(scores) > POOL:
        part = np.argpartition(-scores, POOL - 1)[:POOL]
        return part[np.lexsort((part, -scores[part]))]
    return np.argsort(-scores, kind="stable")


def _scores_semantic(index: BookIndex, query: str, allowed, np):
    """The cosine of every window with the query; -2 where a window has no vector or is not allowed."""
    if not len(index.matrix):
        return np.full(len(index.windows), -2.0, dtype=np.float32)
    rows = index.matrix @ _query_vector(query)
    return np.where((index.window_row >= 0) & allowed, rows[index.window_row], -2.0)


def _scores_bm25(index: BookIndex, query: str, allowed, np):
    """The BM25 score of every window; 0 where no query term occurs or the window is not allowed."""
    if index.post_start is None:
        with _lock:  # built on the first BM25 question: a keyword-only book never pays for it
            if index.post_start is None:
                _bm25_build(index, np)
    n = len(index.windows)
    scores = np.zeros(n, dtype=np.float32)
    vocab_size = len(index.post_start) - 1
    for term, qtf in _counts(text_bigrams(query)).items():
        tid = index.vocab.get(term)
        if tid is None or tid >= vocab_size:
            continue  # unknown, or a term a later chapter brought (none of these windows has it)
        lo, hi = index.post_start[tid], index.post_start[tid + 1]
        packed = index.postings[lo:hi]
        docs = (packed >> DOC_SHIFT) & DOC_MASK
        tfs = (packed & TF_MASK).astype(np.float32)
        idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
        scores[docs] += idf * qtf * tfs * (K1 + 1) / (tfs + index.doc_norm[docs])
    return np.where(allowed, scores, 0.0)


def _counts(terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for term in terms:
        out[term] = out.get(term, 0) + 1
    return out


def recall_search(
    *,
    book: Book,
    query: str,
    mode: str,
    limit: int,
    max_chapter: int | None = None,
    per_chapter: bool = True,
    index: BookIndex | None = None,
    fusion: str | None = None,
) -> list[dict]:
    """The best windows of ``book`` for ``query`` by ``mode`` (semantic | bm25 | hybrid), best first;
    ``per_chapter``: the best window of each chapter only. Each hit names the signals that found it.
    ``fusion`` (hybrid, per chapter; default ``FUSION``): "chapter" or "window" (see the module's docstring)."""
    import numpy as np  # noqa: PLC0415 — see book_index

    index = index or book_index(book=book)
    allowed = np.ones(len(index.windows), dtype=bool)
    if max_chapter is not None:
        allowed = index.chapters <= max_chapter
    scores: dict[str, object] = {}
    if mode in ("semantic", "hybrid"):
        scores["semantic"] = _scores_semantic(index, query, allowed, np)
    if mode in ("bm25", "hybrid"):
        scores["bm25"] = _scores_bm25(index, query, allowed, np)
    if per_chapter and (fusion or FUSION) == "chapter":
        fused, found, order = _fuse_chapters(index, scores, limit, np)
    else:
        fused, found = _fuse_windows(index, scores, np)
        order = sorted(fused, key=lambda d: (-fused[d], d))
    hits, seen = [], set()
    for doc in order:
        window = index.windows[doc]
        if per_chapter and window.chapter in seen:
            continue
        seen.add(window.chapter)
        hits.append(
            {
                "chapter": window.chapter,
                "kind": window.kind,
                "order": window.order,
                "line": window.line,
                "text": window.text,
                "score": round(fused[doc], 6),
                "signals": found[doc],
            }
        )
        if len(hits) >= limit:
            break
    return hits


def _found(signal: str, scores, np):
    """Which entries of ``scores`` the signal found at all (a vector; a query term)."""
    return scores > -2.0 if signal == "semantic" else scores > 0


def _fuse_windows(index: BookIndex, scores: dict, np) -> tuple[dict[int, float], dict[int, list[str]]]:
    """Window-level reciprocal-rank fusion (k = ``RRF_K``): each signal's ``POOL`` best windows."""
    fused: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    for signal, values in scores.items():
        top = _top(values, np)
        docs = [int(i) for i in top if _found(signal, values[i], np)]
        # the windows of one passage share its vector, so its score: they share its rank too (the rank of
        # the passage among the passages), else a passage of three windows would push the next one three
        # places down and the semantic signal would weigh less than BM25's in the fusion
        rows = index.window_row if signal == "semantic" else None
        rank, last = -1, None
        for doc in docs:
            group = int(rows[doc]) if rows is not None else doc
            if group != last:
                rank, last = rank + 1, group
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
            found.setdefault(doc, []).append(signal)
    return fused, found


def _fuse_chapters(index: BookIndex, scores: dict, limit: int, np):
    """Chapter-level weighted reciprocal-rank fusion. Each signal ranks the chapters by their best window;
    a chapter scores Σ weight / (``CHAPTER_K`` + rank + 1) over the signals that found it within their
    ``POOL`` best chapters. Its answer is the window its own signals rank best (the same fusion over the
    chapter's windows). Returns (score, signals, order) by window, as ``_fuse_windows``."""
    starts = np.asarray([index.starts[n] for n, part in index.parts.items() if part.windows], dtype=np.int64)
    if not len(starts):
        return {}, {}, []
    total = np.zeros(len(starts), dtype=np.float64)
    ranks: dict[str, object] = {}
    for signal, values in scores.items():
        best = np.maximum.reduceat(values, starts)
        top = _top(best, np)
        top = top[_found(signal, best[top], np)]
        rank = np.full(len(starts), -1, dtype=np.int64)
        rank[top] = np.arange(len(top))
        ranks[signal] = rank
        total[top] += FUSION_WEIGHTS[signal] / (CHAPTER_K + np.arange(len(top)) + 1)
    chosen = [int(c) for c in np.lexsort((np.arange(len(total)), -total)) if total[c] > 0][:limit]
    fused: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    order = []
    for c in chosen:
        first = int(starts[c])
        size = len(index.windows) - first if c + 1 == len(starts) else int(starts[c + 1]) - first
        inner = np.zeros(size, dtype=np.float64)
        for signal, values in scores.items():
            if ranks[signal][c] < 0:
                continue
            local = values[first : first + size]
            own = np.empty(size, dtype=np.int64)
            own[np.argsort(-local, kind="stable")] = np.arange(size)
            inner += np.where(_found(signal, local, np), FUSION_WEIGHTS[signal] / (CHAPTER_K + own + 1), 0.0)
        doc = first + int(np.argmax(inner))
        fused[doc] = float(total[c])
        found[doc] = [signal for signal in scores if ranks[signal][c] >= 0]
        order.append(doc)
    return fused, found, order


class Provider:
    """What this app registers into kernel.recall."""

    def __init__(self) -> None:
        # the index ``status`` looked at, for the ``search`` that follows it in the same thread
        self._checked = threading.local()

    def status(self, *, book: Book) -> tuple[bool, str]:
        ok, reason = vectors.status()
        if not ok:
            return ok, reason
        try:
            index = book_index(book=book)
        except Exception as exc:  # noqa: BLE001 — a broken store or model never breaks a read: keywords answer
            return False, f"向量索引不可用：{type(exc).__name__}: {exc}"
        self._checked.index = (book.pk, index)
        have, total = index.coverage
        if not have:
            return False, f"本书尚无向量（{total} 个片段未嵌入；运行 manage.py embed {book.slug}）"
        return (
            True,
            "" if have == total else f"{total - have}/{total} 个片段尚无向量（manage.py embed {book.slug} 补上）",
        )

    def search(self, *, book: Book, query: str, mode: str, limit: int, max_chapter: int | None = None) -> list[dict]:
        checked = getattr(self._checked, "index", None)
        self._checked.index = None
        index = checked[1] if checked and checked[0] == book.pk else None
        return recall_search(book=book, query=query, mode=mode, limit=limit, max_chapter=max_chapter, index=index)


PROVIDER = Provider()
