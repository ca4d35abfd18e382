"""The memory page: the book's long-term facts by category and status, each with its chain of
values, its evidence and its source chapter; contradicted and tentative facts first, with the
curator's actions; the memory-hit log; the health report.

Reads come from ``memory.selectors`` (and ``dashboard.selectors`` for the value chains of a page
of facts); the three actions are POST forms (CSRF-checked by Django's middleware) that call the
memory services the REST API calls — ``fact_decide`` / ``fact_observe`` (confirm), ``fact_close``
(mark outdated), ``fact_revise`` (edit) — and need ``memory.change_fact``.
"""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.selectors import book_get
from dashboard import selectors
from dashboard.views import MODE_NAMES, TASK_NAMES, _book_context, page, retrieval_name
from entities.state_labels import state_field_label, state_labels
from kernel.exceptions import DomainError, InvalidInput
from memory import selectors as memory_selectors
from memory import services as memory_services
from memory.models import Fact

FACTS_PER_PAGE = 40
ATTENTION_SHOWN = 100
STATUS_ORDER = [Fact.Status.CONTRADICTED, Fact.Status.TENTATIVE, Fact.Status.ACTIVE, Fact.Status.OUTDATED]
EVIDENCE_KINDS = {
    "chapter_summary": "章节摘要",
    "chapter_meta": "章节设定",
    "new_entity": "新实体",
    "note": "备注",
    "relationship": "关系",
    "revision": "修订",
    "secret": "信息差",
    "setting": "初始设定",
    "state_change": "状态变更",
    "style": "文风",
    "thread": "线索",
    "thread_history": "线索履历",
    "timeline": "时间线",
    "worldview": "世界观",
    "curator": "人工确认",
}
EVIDENCE_KEYS = {
    "section": "段",
    "document": "文档",
    "id": "",
    "entity": "实体",
    "field": "字段",
    "text": "",
    "reason": "",
}


def evidence_text(item: Any, *, names: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> str:
    """One evidence entry as a reader reads it: 状态变更 第12章 实体 林风 字段 境界 …"""
    if not isinstance(item, dict):
        return str(item)
    parts = [EVIDENCE_KINDS.get(str(item.get("kind", "")), str(item.get("kind", "证据")))]
    if item.get("chapter") not in (None, ""):
        parts.append(f"第{item['chapter']}章")
    for key, label in EVIDENCE_KEYS.items():
        value = item.get(key)
        if value in (None, ""):
            continue
        if key == "entity":
            value = (names or {}).get(str(value), value)
        elif key == "field":
            value = state_field_label(str(value), labels)
        parts.append(f"{label} {value}".strip())
    return " ".join(parts)


def _facts_rows(book, facts: list[dict[str, Any]], titles: dict[int, str]) -> list[dict[str, Any]]:
    chains = selectors.fact_value_chains(book=book, facts=facts)
    labels = dict(Fact.Status.choices)
    categories = dict(Fact.Category.choices)
    labels_ = state_labels(book=book)
    refs = {str(e["entity"]) for f in facts for e in f["evidence"] or [] if isinstance(e, dict) and e.get("entity")}
    names = dict(book.entities.filter(entity_id__in=refs).values_list("entity_id", "canonical_name")) if refs else {}
    for f in facts:
        f["status_name"] = labels.get(f["status"], f["status"])
        f["category_name"] = categories.get(f["category"], f["category"])
        f["field_name"] = state_field_label(f["field"], labels_)
        f["evidence_text"] = [evidence_text(e, names=names, labels=labels_) for e in f["evidence"] or []]
        f["chain"] = [
            {**v, "status_name": labels.get(v["status"], v["status"]), "current": v["id"] == f["id"]}
            for v in chains.get((f["category"], f["subject"], f["field"]), [])
        ]
        f["chapter_title"] = titles.get(f["source_chapter"], "")
    return facts


def _fact_groups(
    facts: list[dict[str, Any]], *, open_all: bool, totals: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """A page of facts by category (in the categories' order); a group is open when a filter chose it,
    when it is the page's only one, or when it holds a fact awaiting a decision."""
    by: dict[str, list[dict[str, Any]]] = {}
    for f in facts:
        by.setdefault(f["category"], []).append(f)
    groups = [
        {"value": value, "label": label, "facts": by[value], "total": (totals or {}).get(value, len(by[value]))}
        for value, label in Fact.Category.choices
        if value in by
    ]
    for g in groups:
        waiting = any(f["status"] in (Fact.Status.CONTRADICTED, Fact.Status.TENTATIVE) for f in g["facts"])
        g["open"] = open_all or len(groups) == 1 or waiting
    return groups


def _page_number(raw: str) -> int:
    try:
        return max(1, int(raw))
    except (TypeError, ValueError):
        return 1


@page("memory.view_fact")
def memory_page(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    category = request.GET.get("category", "").strip() or None
    status = request.GET.get("status", "").strip() or None
    text = request.GET.get("q", "").strip() or None
    if category and category not in Fact.Category.values:
        raise InvalidInput(f"未知的事实类别 '{category}'", extra={"category": category})
    if status and status not in Fact.Status.values:
        raise InvalidInput(f"未知的事实状态 '{status}'", extra={"status": status})
    health = memory_selectors.memory_health(book=book)
    attention = []
    for s in (Fact.Status.CONTRADICTED, Fact.Status.TENTATIVE):
        attention += memory_selectors.fact_list(book=book, status=s, limit=ATTENTION_SHOWN)
    attention = attention[:ATTENTION_SHOWN]
    listing = selectors.fact_page(
        book=book,
        category=category,
        status=status,
        text=text,
        page=_page_number(request.GET.get("page", "")),
        per_page=FACTS_PER_PAGE,
        fields=frozenset(k for k, label in state_labels(book=book).items() if text and text in label),
    )
    facts = listing["facts"]
    chapters = {f["source_chapter"] for f in attention + facts if f["source_chapter"]}
    titles = selectors.chapter_titles(book=book, numbers=chapters)
    counts = health["counts"]
    kept = {k: v for k, v in (("category", category), ("status", status), ("q", text)) if v}
    ctx = _book_context(book, "memory")
    ctx.update(
        health=health,
        count_rows=[
            (label, [counts.get(value, {}).get(s, 0) for s in STATUS_ORDER], value)
            for value, label in Fact.Category.choices
        ],
        status_heads=[(s.value, s.label) for s in STATUS_ORDER],
        categories=Fact.Category.choices,
        category=category,
        status=status,
        q=text or "",
        attention=_facts_rows(book, attention, titles),
        groups=_fact_groups(
            _facts_rows(book, facts, titles),
            open_all=bool(category or text),
            totals=None if status or text else {c: sum(n.values()) for c, n in counts.items()},
        ),
        listing=listing,
        pager=[
            {"number": n, "url": f"?{urlencode({**kept, 'page': n})}#facts", "current": n == listing["page"]}
            for n in range(1, listing["pages"] + 1)
        ]
        if listing["pages"] > 1
        else [],
        hits=[
            {
                **h,
                "task_name": TASK_NAMES.get(h["task"], h["task"]),
                "mode_name": MODE_NAMES.get(h["mode"], h["mode"]),
                "retrieval_name": retrieval_name(h["retrieval"]),
                "n_items": len(h["items"]),
            }
            for h in memory_selectors.memory_hits(book=book)
        ],
        can_curate=request.user.has_perm("memory.change_fact"),
        current_chapter=health["chapter"],
    )
    return render(request, "dashboard/memory.html", ctx)


def _memory_url(slug: str, key: str = "") -> str:
    url = reverse("dashboard:memory", args=[slug])
    return f"{url}#fact-{key}" if key else url


def _chapter(raw: str, *, default: int) -> int:
    raw = (raw or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInput(f"章节号必须是整数，收到 '{raw}'", extra={"chapter": raw}) from exc
    if value < 0:
        raise InvalidInput(f"章节号不能为负：{value}", extra={"chapter": value})
    return value


def fact_confirm(*, fact: Fact, user: str) -> str:
    """Contradicted: this value wins (``fact_decide``). Tentative: a curator's evidence at full confidence."""
    if fact.status == Fact.Status.CONTRADICTED:
        memory_services.fact_decide(fact=fact, note=f"仪表盘裁决（{user}）")
        return f"已裁决：采纳「{fact.value}」"
    if fact.status == Fact.Status.TENTATIVE:
        memory_services.fact_observe(
            book=fact.book,
            category=fact.category,
            subject=fact.subject,
            field=fact.field,
            value=fact.value,
            number=fact.source_chapter,
            confidence=1.0,
            evidence=[{"kind": "curator", "chapter": fact.source_chapter, "reason": f"仪表盘确认（{user}）"}],
            origin=fact.origin,
            entity_ref=fact.entity_ref,
            key=fact.key,
        )
        return f"已确认「{fact.subject} · {fact.field}」"
    raise InvalidInput(
        f"事实 {fact.key} 的状态是{fact.get_status_display()}：只有矛盾待裁决或存疑的事实需要确认",
        extra={"fact": fact.key, "status": fact.status},
    )


@require_POST
@page("memory.view_fact", "memory.change_fact")
def memory_fact_action(request: HttpRequest, slug: str, key: str, action: str) -> HttpResponse:
    book = book_get(slug=slug)
    fact = memory_selectors.fact_get(book=book, key=key)
    user = request.user.get_username()
    current = book.chapters.order_by("-number").values_list("number", flat=True).first() or 0
    try:
        if action == "confirm":
            text = fact_confirm(fact=fact, user=user)
        elif action == "outdate":
            if fact.status == Fact.Status.OUTDATED:
                raise InvalidInput(f"事实 {fact.key} 已经是已过时", extra={"fact": fact.key})
            chapter = _chapter(request.POST.get("chapter", ""), default=max(current, fact.source_chapter))
            memory_services.fact_close(fact=fact, number=chapter, reason=f"仪表盘标为过时（{user}）")
            text = f"已将「{fact.subject} · {fact.field}」标为过时（第{chapter}章起）"
        elif action == "edit":
            value = request.POST.get("value", "").strip()
            if not value:
                raise InvalidInput("新的值不能为空", extra={"value": value})
            chapter = _chapter(request.POST.get("chapter", ""), default=max(current, fact.source_chapter))
            new = memory_services.fact_revise(
                fact=fact,
                value=value,
                number=chapter,
                reason=request.POST.get("reason", "").strip() or f"仪表盘修订（{user}）",
            )
            text = f"已修订「{fact.subject} · {fact.field}」为「{new.value}」（第{chapter}章起）"
            key = new.key
        else:
            raise InvalidInput(f"未知的操作 '{action}'，可选 confirm / outdate / edit", extra={"action": action})
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect(_memory_url(slug, fact.key))
    messages.success(request, text)
    return redirect(_memory_url(slug, key))
