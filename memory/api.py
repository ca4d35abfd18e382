"""REST endpoints of the memory app (mounted under /api/books/): context packs, facts, health, import."""

from typing import Any

from django.http import HttpRequest
from ninja import Body, Router, Schema, Status

from core.selectors import book_get
from memory import orchestrator, pipeline, selectors, services
from memory.schemas import CloseIn, DecideIn, FactIn, FactOut, ReviseIn

router = Router(tags=["长期记忆"])


class ContextHitIn(Schema):
    """The pack to log: the same parameters as the context read."""

    task: str = "write"
    budget_tokens: int = orchestrator.DEFAULT_BUDGET
    query: str | None = None
    mode: str | None = None


@router.post("{book}/chapters/{number}/context/hits", response=dict[str, Any], summary="记录章节上下文包的使用")
def context_hit_record(request: HttpRequest, book: str, number: int, payload: ContextHitIn):
    """Log which facts and chunks the pack of chapter ``number`` holds (the memory hit log), after the agent
    used it. The context read itself writes nothing; this is the one door to the log, the same for all."""
    return orchestrator.context_hit_record(
        book=book_get(slug=book),
        number=number,
        task=payload.task,
        budget_tokens=payload.budget_tokens,
        query=payload.query,
        mode=payload.mode,
    )


@router.post("{book}/memory/facts", response={201: FactOut}, summary="记录一条事实")
def fact_observe(request: HttpRequest, book: str, payload: FactIn):
    """Observe a fact; the resolver updates the statuses of its subject+field at once."""
    fact = services.fact_observe(
        book=book_get(slug=book),
        category=payload.category,
        subject=payload.subject,
        field=payload.field,
        value=payload.value,
        chapter=payload.chapter,
        confidence=payload.confidence,
        evidence=payload.evidence,
        entity_ref=payload.entity,
    )
    return Status(201, selectors.fact_to_dict(fact))


@router.post("{book}/memory/facts/{key}/revise", response={201: FactOut}, summary="修订事实（如世界规则）")
def fact_revise(request: HttpRequest, book: str, key: str, payload: ReviseIn):
    """Explicitly revise a fact: the new fact supersedes the old one and links to it."""
    fact = selectors.fact_get(book=book_get(slug=book), key=key)
    new = services.fact_revise(fact=fact, value=payload.value, chapter=payload.chapter, reason=payload.reason)
    return Status(201, selectors.fact_to_dict(new))


@router.post("{book}/memory/facts/{key}/close", response=FactOut, summary="关闭未决线索")
def fact_close(request: HttpRequest, book: str, key: str, payload: CloseIn):
    """Close an open loop (or lift a constraint) at a chapter."""
    fact = selectors.fact_get(book=book_get(slug=book), key=key)
    return selectors.fact_to_dict(services.fact_close(fact=fact, chapter=payload.chapter, reason=payload.reason))


@router.post("{book}/memory/facts/{key}/decide", response=FactOut, summary="裁决矛盾")
def fact_decide(request: HttpRequest, book: str, key: str, payload: DecideIn):
    """Settle a contradiction in favour of this fact's value."""
    fact = selectors.fact_get(book=book_get(slug=book), key=key)
    return selectors.fact_to_dict(services.fact_decide(fact=fact, note=payload.note))


@router.post("{book}/memory/import", response=dict[str, Any], summary="导入 memory_scratchpad.json")
def memory_import(request: HttpRequest, book: str, payload: Body[dict[str, Any]], replace: bool = False):
    """Import a scratchpad, ours or the old plugin's (same ids → updated, not duplicated): ``mapped`` says
    which bucket became which category, ``kept`` the buckets kept verbatim, ``skipped`` the items that
    did not map (with the reason)."""
    return services.scratchpad_import(book=book_get(slug=book), data=payload, replace=replace)


@router.post("{book}/memory/refresh", response=dict[str, int], summary="重新派生全部记忆")
def memory_refresh(request: HttpRequest, book: str):
    """Derive every chapter's facts and retrieval chunks again."""
    return pipeline.memory_refresh(book=book_get(slug=book))
