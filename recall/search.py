"""Semantic and hybrid recall over a book's chapters: vectors, BM25 and their reciprocal-rank fusion.

A book's index is built in-process from its chapter rows (the windows of ``recall.windows``), their
vectors looked up in the store by text hash, and a BM25 over the same windows (the kernel's bigram
tokenizer, postings in numpy arrays); it is kept until a chapter's content hash changes. A window
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
from recall.windows import Window, chapter_windows

RRF_K = 60
POOL = 200  # windows each signal contributes to the fusion
K1, B = 1.5, 0.75
_lock = threading.Lock()
_indexes: dict[int, "BookIndex"] = {}
_query_vectors: dict[str, object] = {}
_QUERY_CACHE = 256


@dataclass
class BookIndex:
    stamp: str
    windows: list[Window]
    chapters: object  # numpy int array: the chapter of each window
    matrix: object  # (n with vectors, 384) float32
    with_vector: object  # indexes into windows of the matrix rows
    vocab: dict[str, int] = field(default_factory=dict)
    post_start: object = None
    post_docs: object = None
    post_tf: object = None
    doc_norm: object = None

    @property
    def coverage(self) -> tuple[int, int]:
        return len(self.with_vector), len(self.windows)


def _book_stamp(book: Book) -> str:
    """What the book's chapters are now, checked on every search: (number, content hash) of each, read from
    the index ``chapter_hash_idx`` with a plain cursor (the ORM's rows cost more than the query)."""
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT number, content_hash FROM {Chapter._meta.db_table} WHERE book_id = %s ORDER BY number", [book.pk]
        )
        rows = cur.fetchall()
    return hashlib.sha1(repr(rows).encode()).hexdigest()


def book_windows(*, book: Book, numbers: list[int] | None = None) -> list[Window]:
    """The windows of ``numbers`` (None: every chapter) of ``book``, in chapter order."""
    rows = Chapter.objects.filter(book=book).order_by("number")
    if numbers is not None:
        rows = rows.filter(number__in=numbers)
    out: list[Window] = []
    for number, summary, body in rows.values_list("number", "summary", "body").iterator(chunk_size=200):
        out += chapter_windows(number=number, summary=summary, body=body)
    return out


def _bm25_build(index: BookIndex, np) -> None:
    vocab: dict[str, int] = {}
    # typed arrays, not lists: millions of postings at 3,000 chapters (4 bytes each instead of ~36)
    terms_col, docs_col, tf_col, lengths = array("i"), array("i"), array("f"), array("i")
    for doc, window in enumerate(index.windows):
        counts: dict[int, int] = {}
        terms = text_bigrams(window.text)
        for term in terms:
            tid = vocab.setdefault(term, len(vocab))
            counts[tid] = counts.get(tid, 0) + 1
        lengths.append(len(terms))
        terms_col.extend(counts.keys())
        tf_col.extend(counts.values())
        docs_col.extend(array("i", [doc]) * len(counts))
    terms_arr = np.frombuffer(terms_col, dtype=np.int32)
    order = np.argsort(terms_arr, kind="stable")
    index.vocab = vocab
    index.post_docs = np.frombuffer(docs_col, dtype=np.int32)[order]
    index.post_tf = np.frombuffer(tf_col, dtype=np.float32)[order]
    lens = np.frombuffer(lengths, dtype=np.int32).astype(np.float32)
    index.doc_norm = K1 * (1 - B + B * lens / max(float(lens.mean()) if len(lens) else 1.0, 1.0))
    # last: a reader that sees the postings' start sees every array they need
    index.post_start = np.searchsorted(terms_arr[order], np.arange(len(vocab) + 1))


def book_index(*, book: Book) -> BookIndex:
    """The book's recall index, rebuilt when a chapter changed since it was built."""
    import numpy as np  # noqa: PLC0415 — numpy comes with the model package (recall is off without it)

    stamp = _book_stamp(book)
    with _lock:
        cached = _indexes.get(book.pk)
    store = vectors.store_get()
    store.refresh()
    if cached is not None and cached.stamp == stamp and len(cached.with_vector) == len(cached.windows):
        return cached
    windows = book_windows(book=book)
    have = [i for i, w in enumerate(windows) if w.key in store.index]
    if cached is not None and cached.stamp == stamp and len(have) == len(cached.with_vector):
        return cached
    matrix = store.matrix([windows[i].key for i in have]) if have else np.zeros((0, vectors.DIMENSIONS), np.float32)
    index = BookIndex(
        stamp=stamp,
        windows=windows,
        chapters=np.asarray([w.chapter for w in windows], dtype=np.int32),
        matrix=matrix,
        with_vector=np.asarray(have, dtype=np.int64),
    )
    with _lock:
        _indexes[book.pk] = index
    return index


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


def _rank_semantic(index: BookIndex, query: str, allowed, np) -> list[int]:
    if not len(index.with_vector):
        return []
    scores = index.matrix @ _query_vector(query)
    scores = np.where(allowed[index.with_vector], scores, -2.0)
    top = _top(scores, np)
    return [int(index.with_vector[i]) for i in top if scores[i] > -2.0]


def _rank_bm25(index: BookIndex, query: str, allowed, np) -> list[int]:
    if index.post_start is None:
        with _lock:  # built on the first BM25 question: a keyword-only book never pays for it
            if index.post_start is None:
                _bm25_build(index, np)
    n = len(index.windows)
    scores = np.zeros(n, dtype=np.float32)
    for term, qtf in _counts(text_bigrams(query)).items():
        tid = index.vocab.get(term)
        if tid is None:
            continue
        lo, hi = index.post_start[tid], index.post_start[tid + 1]
        docs, tfs = index.post_docs[lo:hi], index.post_tf[lo:hi]
        idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
        scores[docs] += idf * qtf * tfs * (K1 + 1) / (tfs + index.doc_norm[docs])
    scores = np.where(allowed, scores, 0.0)
    top = _top(scores, np)
    return [int(i) for i in top if scores[i] > 0]


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
) -> list[dict]:
    """The best windows of ``book`` for ``query`` by ``mode`` (semantic | bm25 | hybrid), best first;
    ``per_chapter``: the best window of each chapter only. Each hit names the signals that found it."""
    import numpy as np  # noqa: PLC0415 — see book_index

    index = index or book_index(book=book)
    allowed = np.ones(len(index.windows), dtype=bool)
    if max_chapter is not None:
        allowed = index.chapters <= max_chapter
    ranked: dict[str, list[int]] = {}
    if mode in ("semantic", "hybrid"):
        ranked["semantic"] = _rank_semantic(index, query, allowed, np)
    if mode in ("bm25", "hybrid"):
        ranked["bm25"] = _rank_bm25(index, query, allowed, np)
    fused: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    for signal, docs in ranked.items():
        for rank, doc in enumerate(docs):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
            found.setdefault(doc, []).append(signal)
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
