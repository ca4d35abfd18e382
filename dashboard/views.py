"""Dashboard pages: server-rendered, read-only, behind the admin login.

Views are thin: fetch through selectors (the owning app's, or ``dashboard.selectors`` for chart
series), turn numbers into SVG with ``dashboard.charts``, render. A domain error (unknown book,
thread, entity; bad chapter number) becomes a Chinese error page with its status, never a 500.
"""

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import DataError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from core.fingerprint import RICHNESS_WINDOW
from core.models import Book
from core.selectors import book_get
from dashboard import charts, selectors, sources
from entities import selectors as entity_selectors
from entities.hierarchy import HIERARCHY_TYPES, entity_ancestors, entity_descendants
from entities.models import Entity
from entities.state_labels import state_field_label
from kernel.exceptions import (
    DATABASE_BUSY_MESSAGE,
    DATABASE_BUSY_RETRY_AFTER,
    DomainError,
    InvalidInput,
    NotFound,
    database_busy,
)
from memory.orchestrator import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET, TASKS, build_memory_pack
from threads import selectors as thread_selectors
from threads.models import Thread

THREAD_TYPES = [t.value for t in Thread.Type]


def page(*perms: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Login required, and ``webnovel.view_book`` plus ``perms`` (the models the page shows) — the
    same model permissions the API asks of a session (core/auth.py); they apply to every book.
    Domain errors render ``dashboard/error.html`` with their status; a busy database is a 503."""
    needed = ["webnovel.view_book", *perms]

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            missing = [perm for perm in needed if not request.user.has_perm(perm)]
            if missing:
                message = f"账号 '{request.user.get_username()}' 缺少权限：{'、'.join(missing)}"
                return render(request, "dashboard/error.html", {"message": message, "extra": {}}, status=403)
            try:
                return view(request, *args, **kwargs)
            except DomainError as exc:
                return render(
                    request,
                    "dashboard/error.html",
                    {"message": exc.message, "extra": exc.extra},
                    status=exc.status_code,
                )
            except (DataError, OverflowError):
                # a NUL byte or a number past 64 bits in the URL: PostgreSQL / SQLite refuse the value
                message = "参数无效：含 NUL 字符或数值超出范围"
                return render(request, "dashboard/error.html", {"message": message, "extra": {}}, status=422)

        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            # outermost: the login check reads the session table, which a busy database can refuse too
            try:
                return guarded(request, *args, **kwargs)
            except OperationalError as exc:
                if not database_busy(exc):
                    raise
                # user: None — the page must not touch the session table again to show who is logged in
                context = {"message": DATABASE_BUSY_MESSAGE, "extra": {}, "user": None}
                response = render(request, "dashboard/error.html", context, status=503)
                response["Retry-After"] = str(DATABASE_BUSY_RETRY_AFTER)
                return response

        return wrapper

    return decorate


def admin_url(name: str, query: str = "") -> str | None:
    """The admin URL ``admin:<name>`` (plus a query string), or None while that admin is not registered."""
    try:
        url = reverse(f"admin:{name}")
    except NoReverseMatch:
        return None
    return f"{url}?{query}" if query else url


def int_param(request: HttpRequest, name: str, *, default: int | None = None, minimum: int = 0) -> int | None:
    """An integer query parameter; a non-number or one below ``minimum`` is InvalidInput (422)."""
    raw = request.GET.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInput(f"参数 {name} 必须是整数，收到 '{raw}'", extra={name: raw}) from exc
    if value < minimum:
        raise InvalidInput(f"参数 {name} 不能小于 {minimum}，收到 {value}", extra={name: value})
    return value


def _book_context(book: Book, section: str) -> dict[str, Any]:
    return {"book": book, "section": section}


@page()
def book_list(request: HttpRequest) -> HttpResponse:
    books = sources.book_cards()
    for card in books:
        card["href"] = reverse("dashboard:overview", args=[card["slug"]])
    return render(
        request, "dashboard/book_list.html", {"books": books, "admin_books": admin_url("webnovel_book_changelist")}
    )


@page()
def overview(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    progress = selectors.book_progress(book=book)
    threads = sources.threads_open(book=book)
    entity_stats = entity_selectors.entity_stats(book=book)
    pending = entity_stats["pending"].get("pending", 0)
    contradicted = sources.contradicted_count(book=book)
    ctx = _book_context(book, "overview")
    ctx.update(
        progress=progress,
        volumes=selectors.book_volumes(book=book),
        progress_chart=charts.line_chart(
            series=[charts.Series("累计字数", progress["cumulative"], css="words")], x_label="章"
        )
        if progress["cumulative"]
        else None,
        words_chart=charts.column_chart(columns=charts.buckets(progress["per_chapter"], max_buckets=120), x_label="章")
        if progress["per_chapter"]
        else None,
        thread_counts=selectors.thread_type_counts(book=book),
        open_threads=len(threads),
        overdue_threads=sum(1 for t in threads if t["overdue"]),
        entity_stats=entity_stats,
        pending=pending,
        pending_url=admin_url("entities_pendingitem_changelist", f"book__id__exact={book.pk}&status__exact=pending"),
        contradicted=contradicted,
        contradicted_url=admin_url("memory_fact_changelist", f"book__id__exact={book.pk}&status__exact=contradicted"),
        secrets=book.secrets.count(),
    )
    return render(request, "dashboard/overview.html", ctx)


@page("threads.view_thread")
def thread_board(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    threads = sources.threads_open(book=book)
    groups = []
    for type_ in THREAD_TYPES:
        rows = [t for t in threads if t["type"] == type_]
        for t in rows:
            t["href"] = reverse("dashboard:thread", args=[book.slug, t["thread_id"]])
        rows.sort(key=lambda t: (-t["hang"], t["thread_id"]))
        bars = [
            charts.Bar(
                label=f"{t['thread_id']} {t['title']}",
                value=t["hang"],
                href=t["href"],
                highlight=t["overdue"],
                title=f"{t['thread_id']} {t['title']}：已悬 {t['hang']} 章（阈值 {t['threshold']}）"
                + (f"，{t['overdue_reason']}" if t["overdue_reason"] else ""),
            )
            for t in rows
        ]
        threshold = book.threshold(type_)
        groups.append(
            {
                "type": type_,
                "threshold": threshold,
                "threads": rows,
                "overdue": sum(1 for t in rows if t["overdue"]),
                "chart": charts.bar_charts(bars=bars, threshold=threshold, unit="章") if bars else None,
            }
        )
    ctx = _book_context(book, "threads")
    ctx.update(
        groups=groups,
        current_chapter=selectors.book_progress(book=book)["current_chapter"],
        closed=Thread.objects.filter(book=book).exclude(status=Thread.Status.OPEN).order_by("thread_id"),
    )
    return render(request, "dashboard/thread_board.html", ctx)


@page("threads.view_thread")
def thread_detail(request: HttpRequest, slug: str, thread_id: str) -> HttpResponse:
    book = book_get(slug=slug)
    thread = thread_selectors.thread_get(book=book, thread_id=thread_id)
    history = thread_selectors.thread_history(book=book, thread_id=thread.thread_id)["entries"]
    touches = selectors.thread_chapter_touches(book=book, thread_id=thread.thread_id)
    progress = selectors.book_progress(book=book)
    current = progress["current_chapter"] or 0
    state = next((t for t in sources.threads_open(book=book) if t["thread_id"] == thread.thread_id), None)
    marks = [charts.Mark(h["chapter"], h["text"], "history") for h in history if h["chapter"] is not None]
    marks += [charts.Mark(t["chapter"], f"{t['kind']}（章节设定）", "touch") for t in touches]
    chapters = [m.chapter for m in marks] + [
        c
        for c in (
            thread.opened_chapter,
            state["planned_end_chapter"] if state else thread.planned_end,
            thread.closed_chapter,
        )
        if c
    ]
    start = min(chapters + [current or 1, 1])
    end = max(chapters + [current, start + 1])
    limit = state["overdue_after"] if state else None
    if limit is not None:
        end = max(end, limit)
    span_end = thread.closed_chapter or current
    axis = charts.chapter_axis(
        start=start,
        end=end,
        marks=marks,
        span=(thread.opened_chapter, span_end) if thread.opened_chapter and span_end else None,
        limit=limit,
    )
    titles = selectors.chapter_titles(book=book, numbers={h["chapter"] for h in history if h["chapter"]})
    for h in history:
        h["chapter_title"] = titles.get(h["chapter"], "")
    ctx = _book_context(book, "threads")
    ctx.update(
        thread=thread,
        history=history,
        touches=touches,
        state=state,
        current_chapter=current,
        axis=axis,
        admin_change=admin_url("threads_thread_changelist", f"q={thread.thread_id}"),
    )
    return render(request, "dashboard/thread_detail.html", ctx)


ENTITIES_SHOWN = 300  # a long book has thousands of entities; search narrows the list


@page("entities.view_entity")
def entity_list(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    type_ = request.GET.get("type", "").strip() or None
    query = request.GET.get("q", "").strip()
    entities = entity_selectors.entity_list(book=book, type=type_)
    if query:
        entities = [
            e
            for e in entities
            if query in e["canonical_name"] or query in e["id"] or any(query in a["alias"] for a in e["aliases"])
        ]
    ctx = _book_context(book, "entities")
    ctx.update(
        entities=entities[:ENTITIES_SHOWN],
        total=len(entities),
        shown=ENTITIES_SHOWN,
        type=type_,
        q=query,
        types=[t.value for t in Entity.Type],
    )
    return render(request, "dashboard/entity_list.html", ctx)


def display_value(value: Any) -> str:
    """A state value as an author reads it: lists joined with 、, mappings as key：value, None as —."""
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return "、".join(display_value(v) for v in value) or "（空）"
    if isinstance(value, dict):
        return "；".join(f"{k}：{display_value(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "是" if value else "否"
    return str(value)


STATE_OP_NAMES = {"set": "设为", "unset": "清除", "add": "加入", "remove": "移除", "inc": "增加"}


def _as_of_choices(changes: list[dict], current: int | None, as_of: int | None = None) -> list[int]:
    """The chapters the selector offers: the initial setting, every chapter with a change, the current
    chapter, and the chapter being viewed (so the selector always shows it)."""
    extra = {c for c in (current, as_of) if c is not None}
    return sorted({c["chapter"] for c in changes} | {0} | extra)


@page("entities.view_entity")
def entity_detail(request: HttpRequest, slug: str, entity_id: str) -> HttpResponse:
    book = book_get(slug=slug)
    as_of = int_param(request, "as_of")
    entity = entity_selectors.entity_get(book=book, ref=entity_id)
    detail = entity_selectors.entity_detail(book=book, ref=entity.entity_id, as_of=as_of)
    changes = entity_selectors.entity_state_changes(entity=entity)
    current = selectors.book_progress(book=book)["current_chapter"]
    appearances = entity_selectors.entity_appearances(book=book, ref=entity.entity_id)["chapters"]
    graph = entity_selectors.relationship_graph(book=book, ref=entity.entity_id, depth=1, as_of=as_of)
    nodes = [
        charts.Node(
            key=n["id"],
            label=n["canonical_name"],
            href=reverse("dashboard:entity", args=[book.slug, n["id"]]),
            css=f"type-{n['type']}",
        )
        for n in graph["nodes"]
    ]
    edges = [charts.Edge(e["from"], e["to"], e["type"]) for e in graph["edges"]]
    names = {n["id"]: n["canonical_name"] for n in graph["nodes"]}
    for e in graph["edges"]:
        e["from_name"], e["to_name"] = names.get(e["from"], e["from"]), names.get(e["to"], e["to"])
    for change in changes:
        change["applied"] = as_of is None or change["chapter"] <= as_of
        change["new_text"] = display_value(change["new"])
        change["field_name"] = state_field_label(change["field"])
        change["op_name"] = STATE_OP_NAMES.get(change["op"], change["op"])
        change["old_text"] = display_value(change["old"]) if change["old"] is not None else ""
    ctx = _book_context(book, "entities")
    ctx.update(
        entity=detail,
        state_rows=[(k, state_field_label(k), display_value(v)) for k, v in detail["state"].items()],
        as_of=as_of,
        as_of_choices=_as_of_choices(changes, current, as_of),
        current_chapter=current,
        changes=changes,
        change_axis=charts.chapter_axis(
            start=min([c["chapter"] for c in changes] + [1]),
            end=max([c["chapter"] for c in changes] + [current or 1, 2]),
            marks=[
                charts.Mark(c["chapter"], f"{c['field_name']}{c['op_name']}{c['new_text']}", "change") for c in changes
            ],
            limit=as_of,
            limit_label="截至",
            width=480,
            labels=True,
        )
        if changes
        else None,
        appearances=appearances,
        appearance_chart=charts.column_chart(
            columns=charts.buckets([(a["chapter"], a["count"]) for a in appearances], max_buckets=120), x_label="章"
        )
        if appearances
        else None,
        graph=graph,
        graph_svg=charts.relationship_graph(nodes=nodes, edges=edges, center=graph["center"])
        if graph["edges"]
        else None,
        admin_change=admin_url("entities_entity_changelist", f"q={entity.entity_id}"),
        hierarchy=_hierarchy(book, entity),
    )
    return render(request, "dashboard/entity_detail.html", ctx)


def _hierarchy(book: Book, entity: Entity) -> dict[str, Any] | None:
    """Issue 31: the place's / faction's chain from the top and what lies within it (None for other types)."""
    if entity.type not in HIERARCHY_TYPES:
        return None
    up = entity_ancestors(book=book, ref=entity.entity_id)["ancestors"]
    down = entity_descendants(book=book, ref=entity.entity_id)["descendants"]
    return {"ancestors": list(reversed(up)), "descendants": down}


STYLE_FEATURE_NAMES = {
    "avg_sentence_length": "平均句长（字）",
    "avg_paragraph_length": "平均段长（字）",
    "dialogue_ratio": "对话占比",
    "cjk_ratio": "汉字占比",
    "exclamations_per_1k": "感叹号（每千字）",
    "questions_per_1k": "问号（每千字）",
    "ellipses_per_1k": "省略号（每千字）",
    "commas_per_sentence": "每句逗号数",
    "sentence_length_variance": "句长方差（字²）",
    "vocabulary_richness": f"词汇丰富度（每 {RICHNESS_WINDOW} 字的字种比）",
    "common_phrase_ratio": "常用短语占比",
}
LEAK_REASONS = {"reader_not_told": "读者尚未被告知", "pov_unaware": "视角人物此时不知情"}


@page("threads.view_secret")
def secrets(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    scan = request.GET.get("leaks") == "1"
    data = sources.secrets_overview(book=book, scan_leaks=scan)
    current = data["accumulation"]["current_chapter"] or 0
    for row in data["secrets"]:
        marks = [charts.Mark(k["since"], f"{k['name']} 得知", "knower") for k in row["knowers"] if k["since"]]
        if row["reader_told_chapter"]:
            marks.append(charts.Mark(row["reader_told_chapter"], "读者得知", "reader"))
        chapters = [m.chapter for m in marks] + [row["registered_chapter"] or 1, current]
        row["axis"] = charts.chapter_axis(
            start=1,
            end=max(chapters + [2]),
            marks=marks,
            span=(row["registered_chapter"], row["reader_told_chapter"] or current)
            if row["registered_chapter"]
            else None,
            height=70,
            width=640,
        )
    accumulation = data["accumulation"]
    bars = [
        charts.Bar(
            label=f"{r['id']} {r['title']}",
            value=r["accumulated"] or 0,
            highlight=r["over_limit"],
            title=f"{r['id']} {r['title']}：已积压 {r['accumulated']} 章（上限 {accumulation['threshold']}）",
        )
        for r in accumulation["secrets"]
    ]
    leaks = data["leaks"]["leaks"] if scan else []
    for leak in leaks:
        leak["reason_text"] = "；".join(LEAK_REASONS.get(r, r) for r in leak["reasons"])
        leak["keywords_text"] = "、".join(leak["keywords"])
        leak["lines_text"] = "、".join(str(n) for n in leak["lines"][:10]) + ("…" if len(leak["lines"]) > 10 else "")
    ctx = _book_context(book, "secrets")
    ctx.update(
        secrets=data["secrets"],
        accumulation=accumulation,
        accumulation_chart=charts.bar_charts(
            bars=bars, threshold=accumulation["threshold"], threshold_label="上限", unit="章"
        )
        if bars
        else None,
        scanned=scan,
        leaks=leaks,
        leaks_total=data["leaks"]["total"] if scan else 0,
        leaks_shown=sources.LEAKS_SHOWN,
        secrets_scanned=data["leaks"]["secrets_scanned"] if scan else 0,
    )
    return render(request, "dashboard/secrets.html", ctx)


@page("memory.view_fact")
def context_preview(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    current = selectors.book_progress(book=book)["current_chapter"]
    chapter = int_param(request, "chapter", default=(current or 0) + 1, minimum=1)
    budget = int_param(request, "budget", default=DEFAULT_BUDGET, minimum=1)
    task = request.GET.get("task", "write")
    ctx = _book_context(book, "context")
    ctx.update(
        chapter=chapter,
        budget=budget,
        task=task,
        tasks=[(t, TASK_NAMES.get(t, t)) for t in TASKS],
        min_budget=MIN_BUDGET,
        max_budget=MAX_BUDGET,
    )
    try:
        pack = build_memory_pack(book=book, number=chapter, task=task, budget_tokens=budget)
    except InvalidInput as exc:  # keep the form on the page so the value can be corrected
        ctx.update(pack=None, error=exc.message)
        return render(request, "dashboard/context.html", ctx, status=exc.status_code)
    for it in pack["items"]:
        it["layer_name"] = LAYER_NAMES.get(it["layer"], it["layer"])
    included = [it for it in pack["items"] if it["included"]]
    skipped = [it for it in pack["items"] if not it["included"]]
    ctx.update(
        pack=pack,
        included=included,
        skipped=skipped,
        usage=charts.bar_charts(
            bars=[
                charts.Bar(label=LAYER_NAMES.get(layer, layer), value=tokens)
                for layer, tokens in pack["layers"].items()
            ],
            threshold=pack["budget_tokens"],
            threshold_label="预算",
            unit=" 词元",
        ),
    )
    return render(request, "dashboard/context.html", ctx)


LAYER_NAMES = {"working": "工作层", "scratchpad": "事实层", "episodic": "情节检索层"}
TASK_NAMES = {"write": "写作", "review": "审阅", "query": "查询"}  # memory.interfaces and the admin say 审阅
MODE_NAMES = {"full": "完整", "simple": "简易（不用记忆）"}  # as the memory admin names them
RETRIEVAL_NAMES = {"bm25": "关键词检索", "embeddings": "语义检索（向量）", "hybrid": "关键词 + 语义融合"}


def retrieval_name(method: str) -> str:
    """A pack's retrieval method (``bm25``, ``embeddings``, ``hybrid（BM25 + 向量，…）``, ``bm25（嵌入失败，
    已回退：ValueError）``) in the authors' words: the method named, its Chinese note kept, an
    exception's class name dropped; a method with no name shows as it is."""
    head, paren, note = (method or "").partition("（")
    name = RETRIEVAL_NAMES.get(head.strip().lower())
    if name is None:
        return method or "—"
    if head.strip().lower() == "hybrid" or not paren:
        return name
    note = re.sub(r"[：:]\s*[A-Za-z_][\w.]*\s*）$", "）", note).replace("嵌入", "语义检索")
    return f"{name}（{note}"


def _padded_range(values: list[float]) -> dict[str, float]:
    """A y range hugging the values (±25% of their spread, at least ±10% of the largest): a drift of
    a few percent must be visible, which it is not on an axis that starts at zero."""
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.25, abs(hi) * 0.1, 1e-6)
    return {"y_min": round(max(0.0, lo - pad), 4), "y_max": round(hi + pad, 4)}


@page("webnovel.view_fingerprint")
def style_drift(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    span = (book.style_baseline_end or 10) - (book.style_baseline_start or 1) + 1
    window = int_param(request, "window", default=max(1, span), minimum=1)
    ctx = _book_context(book, "style")
    try:
        data = sources.style_series(book=book, window=window)
    except NotFound as exc:  # no baseline in book.yaml, or no chapters yet: an empty state, not an error
        ctx.update(features=None, empty_reason=exc.message)
        return render(request, "dashboard/style.html", ctx)
    features = []
    for row in data["drift"]["features"]:
        points = data["series"].get(row["feature"], [])
        shown = [v for _, v in points] + [v for v in (row["baseline"], row["current"]) if v is not None]
        y_range = _padded_range(shown) if shown else {"y_min": 0, "y_max": 1}
        decimals = charts.chart_decimals(y_range["y_min"], y_range["y_max"])  # the table reads like its chart
        features.append(
            {
                **row,
                "baseline_text": charts.number_text(row["baseline"], decimals=decimals)
                if row["baseline"] is not None
                else "—",
                "current_text": charts.number_text(row["current"], decimals=decimals)
                if row["current"] is not None
                else "—",
                "label": STYLE_FEATURE_NAMES.get(row["feature"], row["feature"]),
                "chart": charts.line_chart(
                    series=[charts.Series(STYLE_FEATURE_NAMES.get(row["feature"], row["feature"]), points)],
                    baseline=row["baseline"],
                    width=480,
                    height=200,
                    **_padded_range([v for _, v in points] + [row["baseline"]]),
                )
                if points
                else None,
            }
        )
    ctx.update(drift=data["drift"], features=features, window=window, ranges=len(data["ranges"]))
    return render(request, "dashboard/style.html", ctx)
