"""Hybrid recall of scratchpad facts (issue 32): BM25 over the facts' texts fused with their vectors.

The vectors are the recall app's (recall/facts.py): a fact is embedded when it is observed or revised
(memory/services.py, after the commit) and, for the facts a chapter derives in bulk, by the after-chapter
hook ``facts_after_chapter`` (after memory's own); each is keyed by the hash of its text, so only a new or
revised fact is ever embedded, and ``facts_search`` embeds whatever is still missing before it ranks.
Without vectors (recall off, model missing or broken) BM25 answers alone and the method says so.
"""

import logging
import math
from typing import Any

from core.models import Book
from memory import selectors
from memory.models import Fact
from memory.retrieval import RRF_K, text_terms
from recall.facts import fact_text, facts_embed, facts_rank

logger = logging.getLogger(__name__)

K1, B = 1.5, 0.75
METHOD_HYBRID = "hybrid（BM25 + 向量，倒数排名融合）"


def facts_after_chapter(*, book: Book, numbers: list[int] | None, **_: Any) -> None:
    """The after-chapter hook: vectors for the facts of the chapters just written (None: the book's)."""
    rows = Fact.objects.filter(book=book)
    if numbers is not None:
        rows = rows.filter(source_chapter__in=numbers)
    facts_embed(fact_text(subject=s, field=f, value=v) for s, f, v in rows.values_list("subject", "field", "value"))


def _bm25(query: str, texts: list[str]) -> list[int]:
    docs = [text_terms(t) for t in texts]
    n = len(docs)
    avg = max(sum(len(d) for d in docs) / n, 1.0) if n else 1.0
    df: dict[str, int] = {}
    for terms in docs:
        for term in set(terms):
            df[term] = df.get(term, 0) + 1
    wanted = set(text_terms(query))
    scores = []
    for i, terms in enumerate(docs):
        score = 0.0
        for term in wanted:
            tf = terms.count(term)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(terms) / avg))
        if score > 0:
            scores.append((-score, i))
    return [i for _, i in sorted(scores)]


def facts_search(*, book: Book, query: str, as_of: int, limit: int = 8) -> tuple[list[dict[str, Any]], str]:
    """The facts active at chapter ``as_of`` that best answer ``query``, best first, each with the
    ``signals`` that found it, and the method (hybrid, or bm25 with the reason)."""
    rows = [(f, status) for f, status, _ in selectors.facts_as_of(book=book, as_of=as_of)]
    rows = [(f, status) for f, status in rows if status == Fact.Status.ACTIVE and f.value.strip()]
    if not rows or not query.strip():
        return [], "bm25"
    texts = [fact_text(subject=f.subject, field=f.field, value=f.value) for f, _ in rows]
    ranked = {"bm25": _bm25(query, texts)}
    method = METHOD_HYBRID
    try:
        semantic = facts_rank(query, texts)
    except Exception as exc:  # noqa: BLE001 — the vectors are optional: BM25 answers, and says so
        logger.warning("事实向量检索失败，回退到 BM25：%s", exc)
        semantic, method = None, f"bm25（向量检索失败，已回退：{type(exc).__name__}）"
    if semantic is None:
        method = method if method != METHOD_HYBRID else "bm25"
    else:
        ranked["semantic"] = semantic[: max(limit * 5, 40)]
    scores: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    for signal, order in ranked.items():
        for rank, i in enumerate(order):
            scores[i] = scores.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
            found.setdefault(i, []).append(signal)
    best = sorted(scores, key=lambda i: (-round(scores[i], 9), i))[:limit]
    return [
        {
            "key": rows[i][0].key,
            "category": rows[i][0].category,
            "subject": rows[i][0].subject,
            "field": rows[i][0].field,
            "value": rows[i][0].value,
            "source_chapter": rows[i][0].source_chapter,
            "score": round(scores[i], 4),
            "signals": found[i],
        }
        for i in best
    ], method
