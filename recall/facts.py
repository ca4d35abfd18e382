"""Vectors of scratchpad facts: the memory app hands the texts (it sits above this app and owns the rows).

A fact is embedded as one short text, ``主体·字段：值`` (``fact_text``), cut at ``FACT_TOKENS`` of the
model's tokens, into the same store as the chapters' passages and keyed the same way (the hash of the
text and its budget): a fact that is added or revised has a new text, so only it is embedded; an
unchanged fact, a rebuild, or the same words in another book cost nothing. Recall off or the model
missing: nothing is embedded and ``facts_rank`` answers None (the caller's keywords answer alone).
"""

import logging
from collections.abc import Iterable

from django.db import transaction

from recall import vectors
from recall.windows import text_key

logger = logging.getLogger(__name__)

FACT_TOKENS = 64
_TAG = f"fact{FACT_TOKENS}:"


def fact_text(*, subject: str, field: str, value: str) -> str:
    """The text a fact is embedded and matched as."""
    head = "·".join(p for p in ((subject or "").strip(), (field or "").strip()) if p)
    return f"{head}：{(value or '').strip()}" if head else (value or "").strip()


def fact_key(text: str) -> str:
    return text_key(_TAG + text)


def facts_embed(texts: Iterable[str]) -> int:
    """Embed the fact texts that have no vector yet; how many were embedded (0 when recall is off)."""
    ok, _ = vectors.status()
    if not ok:
        return 0
    todo = {fact_key(t): t for t in texts if t.strip()}
    store = vectors.store_get()
    store.refresh()
    return store.add(todo, tokens=FACT_TOKENS)


def facts_rank(query: str, texts: list[str], *, embed: bool = True) -> list[int] | None:
    """The indexes of ``texts`` by cosine to ``query``, best first (texts without a vector left out;
    ``embed``: the missing ones are embedded first). None when recall is unavailable."""
    import numpy as np  # noqa: PLC0415 — numpy comes with the model package (recall is off without it)

    ok, _ = vectors.status()
    if not ok or not texts:
        return None if not ok else []
    if embed:
        facts_embed(texts)
    store = vectors.store_get()
    have = [i for i, t in enumerate(texts) if fact_key(t) in store.index]
    if not have:
        return []
    matrix = store.matrix([fact_key(texts[i]) for i in have])
    scores = matrix @ vectors.query_embed(query)
    return [have[i] for i in np.argsort(-scores, kind="stable")]


def facts_embed_after_commit(texts: list[str]) -> None:
    """Embed ``texts`` once the write that made them is committed; a failure is a warning, never the
    write's (the next ``facts_rank`` embeds what is still missing)."""
    if not texts or not vectors.status()[0]:
        return

    def run() -> None:
        try:
            facts_embed(texts)
        except Exception as exc:  # noqa: BLE001 — the vectors are optional: the fact is written
            logger.warning("事实向量未生成（稍后检索时补上）：%s: %s", type(exc).__name__, exc)

    transaction.on_commit(run)
