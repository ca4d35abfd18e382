"""REST endpoints of the memory app (mounted under /api/books/): context packs, facts, health, import."""

from typing import Any

from django.http import HttpRequest
from ninja import Body, Router, Status

from core.schemas import documented
from core.selectors import book_get
from kernel.busy import write_if_free
from kernel.exceptions import InvalidInput
from memory import interfaces, orchestrator, pipeline, selectors, services
from memory.models import Fact
from memory.schemas import CloseIn, DecideIn, FactIn, FactOut, PackOut, ReviseIn

router = Router(tags=["长期记忆"])

# Choices and limits the orchestrator and selectors enforce, stated in the OpenAPI schema.
Chapter = documented(int, minimum=1)
Task = documented(str, enum=list(orchestrator.TASKS))
Budget = documented(int, minimum=orchestrator.MIN_BUDGET, maximum=orchestrator.MAX_BUDGET)
FactLimit = documented(int, minimum=1, maximum=2000)
FactCategory = documented(str, nullable=True, enum=list(Fact.Category.values))
FactStatus = documented(str, nullable=True, enum=list(Fact.Status.values))
PackFormat = documented(str, enum=["json", "text"])
PackMode = documented(str, nullable=True, enum=["full", "simple"])


@router.get("{book}/chapters/{number}/context", response=PackOut | str, summary="章节上下文包")
def context_pack(
    request: HttpRequest,
    book: str,
    number: Chapter,
    task: Task = "write",
    budget: Budget = orchestrator.DEFAULT_BUDGET,
    query: str | None = None,
    mode: PackMode = None,
    format: PackFormat = "json",
):
    """The pack the AI reads before writing / reviewing / querying chapter ``number``: every candidate
    item is listed as included or skipped with its layer, priority, token cost and reason. The build
    is recorded in the memory-hit log (skipped while another writer holds the database). ``format=text`` returns the human rendering as a string."""
    if format not in {"json", "text"}:
        raise InvalidInput(f"未知的格式 '{format}'，可选 json / text", extra={"format": format})
    b = book_get(slug=book)
    pack = interfaces.context_pack(book=b, number=number, task=task, budget=budget, query=query, mode=mode)
    # a read: the hit log is recorded if no writer holds the database now, never waited for
    write_if_free(lambda: services.memory_hit_record(book=b, pack=pack))
    return orchestrator.pack_text(pack) if format == "text" else pack


@router.get("{book}/context/diff", response=dict[str, Any], summary="两章上下文包的差异")
def context_diff(
    request: HttpRequest,
    book: str,
    a: Chapter,
    b: Chapter,
    task: Task = "write",
    budget: Budget = orchestrator.DEFAULT_BUDGET,
):
    """Items only in chapter ``a``'s pack, only in ``b``'s, and in both with a changed text."""
    return interfaces.context_diff(book=book_get(slug=book), a=a, b=b, task=task, budget=budget)


@router.get("{book}/memory/facts", response=list[FactOut], summary="记忆事实列表")
def fact_list(
    request: HttpRequest,
    book: str,
    category: FactCategory = None,
    status: FactStatus = None,
    subject: str | None = None,
    chapter: int | None = None,
    limit: FactLimit = 200,
):
    """Facts filtered by category, status, subject, or established at or before ``chapter``."""
    return selectors.fact_list(
        book=book_get(slug=book), category=category, status=status, subject=subject, chapter=chapter, limit=limit
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


@router.get("{book}/memory/facts/{key}", response=dict[str, Any], summary="事实及其履历")
def fact_detail(request: HttpRequest, book: str, key: str):
    """One fact, its event history, and every value of its subject+field."""
    return interfaces.memory_fact(book=book_get(slug=book), key=key)


@router.post("{book}/memory/facts/{key}/revise", response={201: FactOut}, summary="修订事实（如世界规则）")
def fact_revise(request: HttpRequest, book: str, key: str, payload: ReviseIn):
    """Explicitly revise a fact: the new fact supersedes the old one and links to it."""
    fact = services.fact_get(book=book_get(slug=book), key=key)
    new = services.fact_revise(fact=fact, value=payload.value, chapter=payload.chapter, reason=payload.reason)
    return Status(201, selectors.fact_to_dict(new))


@router.post("{book}/memory/facts/{key}/close", response=FactOut, summary="关闭未决线索")
def fact_close(request: HttpRequest, book: str, key: str, payload: CloseIn):
    """Close an open loop (or lift a constraint) at a chapter."""
    fact = services.fact_get(book=book_get(slug=book), key=key)
    return selectors.fact_to_dict(services.fact_close(fact=fact, chapter=payload.chapter, reason=payload.reason))


@router.post("{book}/memory/facts/{key}/decide", response=FactOut, summary="裁决矛盾")
def fact_decide(request: HttpRequest, book: str, key: str, payload: DecideIn):
    """Settle a contradiction in favour of this fact's value."""
    fact = services.fact_get(book=book_get(slug=book), key=key)
    return selectors.fact_to_dict(services.fact_decide(fact=fact, note=payload.note))


@router.get("{book}/memory/health", response=dict[str, Any], summary="记忆健康报告")
def memory_health(request: HttpRequest, book: str, chapter: int | None = None):
    """Open loops overdue, contradicted facts, constraints that drifted, counts."""
    return selectors.memory_health(book=book_get(slug=book), chapter=chapter)


@router.get("{book}/memory/hits", response=list[dict[str, Any]], summary="记忆命中日志")
def memory_hits(request: HttpRequest, book: str, chapter: int | None = None):
    """Which facts and chunks went into each chapter's last pack."""
    return selectors.memory_hits(book=book_get(slug=book), chapter=chapter)


@router.get("{book}/memory/export", response=dict[str, Any], summary="导出 memory_scratchpad.json")
def memory_export(request: HttpRequest, book: str):
    """The scratchpad in the plugin's format (one bucket per category)."""
    return selectors.scratchpad_export(book=book_get(slug=book))


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
