"""Reads of the story system: reference search (the primitive) and the stored master / chapter
settings, with the effective setting of a chapter. Routing is the routing engine's
(storysystem/routing.py), building a StorySystemDict storysystem/storydict.py's: these reads answer through them.

Building a StorySystemDict writes nothing: it is a read of the library. Persisting it is a service.
"""

from typing import Any

from core.models import Book
from kernel.exceptions import InvalidInput, NotFound
from storysystem.models import StorySetting
from storysystem.routing import anti_patterns_of, genre_route
from storysystem.search import Doc, index_get
from storysystem.storydict import base_context_keyed, chapter_compose, effective_merge, override_policy_for

# ---------------------------------------------------------------- search


def _result(doc: Doc, score: float, matched: list[str], rank: int) -> dict[str, Any]:
    p = doc.payload
    return {
        "rank": rank,
        "score": round(score, 4),
        "code": p["code"],
        "table": p["table"],
        "library": p["library"],
        "category": p["category"],
        "level": p["level"],
        "skills": p["skills"],
        "genres": p["genres"],
        "keywords": p["keywords"],
        "intents": p["intents"],
        "instruction": p["instruction"],
        "summary": p["summary"],
        "detail": p["detail"],
        "fields": p["fields"],
        "anti_patterns": anti_patterns_of(p),
        "matched_terms": matched,
    }


def reference_search(
    *,
    query: str,
    table: str | None = None,
    skill: str | None = None,
    genre: str | None = None,
    max_results: int = 10,
) -> dict[str, Any]:
    """BM25F search of the enabled libraries. The envelope is stable: query, filters, max_results,
    total (matches after filters), results (ranked, each with its anti-patterns)."""
    query = (query or "").strip()
    if not query:
        raise InvalidInput("检索词不能为空", extra={"field": "q"})
    if max_results < 1 or max_results > 100:
        raise InvalidInput(f"max_results 必须在 1–100 之间（收到 {max_results}）", extra={"field": "max_results"})
    index = index_get()
    total, hits = index.search(
        query, table=table or None, skill=skill or None, genres=[genre] if genre else None, max_results=max_results
    )
    return {
        "query": query,
        "filters": {"table": table or None, "skill": skill or None, "genre": genre or None},
        "max_results": max_results,
        "total": total,
        "results": [_result(doc, score, matched, rank) for rank, (doc, score, matched) in enumerate(hits, start=1)],
    }


# ---------------------------------------------------------------- stored settings


def master_get(*, book: Book) -> StorySetting:
    """The book's stored master setting, or NotFound telling how to create one."""
    setting = StorySetting.objects.filter(book=book, chapter__isnull=True).first()
    if setting is None:
        raise NotFound(
            f'《{book.title or book.slug}》还没有故事系统总设定：先运行 story_system "<题材描述>" --book {book.slug} --persist',
            extra={"book": book.slug},
        )
    return setting


def chapter_setting_get(*, book: Book, number: int) -> StorySetting:
    setting = StorySetting.objects.filter(book=book, chapter=number).first()
    if setting is None:
        raise NotFound(
            f"《{book.title or book.slug}》第{number}章没有章节设定", extra={"book": book.slug, "chapter": number}
        )
    return setting


def chapter_effective(*, book: Book, number: int) -> dict[str, Any]:
    """The effective setting for a chapter: master merged with the chapter override, each field with its origin."""
    if number < 1:
        raise InvalidInput(f"章号必须为正整数（收到 {number}）", extra={"chapter": number})
    master = master_get(book=book).data
    setting = StorySetting.objects.filter(book=book, chapter=number).first()
    contributions = (setting.data.get("contributions") if setting else None) or {}
    policy = override_policy_for(book=book)
    merged = effective_merge(master=master, contributions=contributions, policy=policy)
    has_dynamic = bool(setting and contributions.get("dynamic_context"))
    return {
        "book": book.slug,
        "chapter": number,
        "has_chapter_override": setting is not None,
        "chapter_query": setting.query if setting else None,
        "master_constraints": {name: f["value"] for name, f in merged["fields"].items()},
        "fields": merged["fields"],
        "anti_patterns": merged["anti_patterns"],
        "base_context": base_context_keyed(master["base_context"], master["route"].get("base_tables", [])),
        "dynamic_context": contributions["dynamic_context"] if has_dynamic else master["dynamic_context"],
        "dynamic_context_origin": "chapter" if has_dynamic else "master",
        "override_policy": policy,
        "ignored_locked": contributions.get("ignored_locked", {}),
    }


def chapter_story(*, book: Book, number: int) -> dict[str, Any]:
    """A chapter's stored setting as a StorySystemDict merged with the current master."""
    master = master_get(book=book).data
    setting = chapter_setting_get(book=book, number=number)
    return chapter_compose(
        book=book, number=number, master=master, record=setting.data, policy=override_policy_for(book=book)
    )


def master_story(*, book: Book) -> dict[str, Any]:
    """The stored master StorySystemDict of the book."""
    return master_get(book=book).data


# ---------------------------------------------------------------- book-scoped reads (the front doors)


def story_search(
    *,
    book: Book,
    q: str,
    table: str | None = None,
    skill: str | None = None,
    genre: str | None = None,
    max_results: int = 10,
) -> dict[str, Any]:
    """Search the reference library (the library is shared; the book only scopes access)."""
    return reference_search(query=q, table=table, skill=skill, genre=genre, max_results=max_results)


def story_route(*, book: Book, q: str = "", genre: str | None = None) -> dict[str, Any]:
    """The genre route a query takes."""
    if not (q or "").strip() and not (genre or "").strip():
        raise InvalidInput("需要查询词 q 或题材 genre", extra={"field": "q"})
    return genre_route(query=q, genre=genre)
