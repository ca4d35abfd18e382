"""Reads that only the dashboard needs (chart series and page summaries).

Domain reads — overdue threads, secret accumulation, entity state, memory packs — belong to their
apps' selectors and are called from the views, never re-queried here. What is left are aggregates
shaped for pictures: words per chapter, volume totals, the chapters that touch a thread. Each is a
constant number of queries whatever the book's length (``values_list`` over indexed columns).
"""

from django.db.models import Case, Count, IntegerField, Max, Min, Q, Sum, Value, When

from core.models import Book, Chapter
from memory.models import Fact
from memory.selectors import fact_to_dict
from threads.models import Thread

FACT_STATUS_ORDER = [Fact.Status.CONTRADICTED, Fact.Status.TENTATIVE, Fact.Status.ACTIVE, Fact.Status.OUTDATED]


def book_progress(*, book: Book) -> dict:
    """Totals and the per-chapter word series of a book (one row per chapter, no bodies loaded)."""
    rows = list(Chapter.objects.filter(book=book).order_by("number").values_list("number", "word_count", "volume"))
    words = [(number, wc) for number, wc, _ in rows]
    cumulative, total = [], 0
    for number, wc in words:
        total += wc
        cumulative.append((number, total))
    return {
        "chapters": len(rows),
        "words": total,
        "current_chapter": rows[-1][0] if rows else None,
        "first_chapter": rows[0][0] if rows else None,
        "per_chapter": words,
        "cumulative": cumulative,
        "average": round(total / len(rows)) if rows else 0,
    }


def book_volumes(*, book: Book) -> list[dict]:
    """Volumes with the chapters and words actually written in each (two queries)."""
    written = {
        row["volume"]: row
        for row in Chapter.objects.filter(book=book)
        .values("volume")
        .annotate(n=Count("id"), words=Sum("word_count"), first=Min("number"), last=Max("number"))
        .order_by("volume")
    }
    out = []
    for vol in book.volumes.order_by("number").values("number", "name", "start_chapter", "end_chapter"):
        row = written.get(vol["number"], {})
        out.append({**vol, "chapters": row.get("n", 0), "words": row.get("words") or 0})
    return out


def chapter_titles(*, book: Book, numbers: set[int]) -> dict[int, str]:
    """Titles of the given chapters, in one query."""
    if not numbers:
        return {}
    return dict(Chapter.objects.filter(book=book, number__in=numbers).values_list("number", "title"))


def thread_chapter_touches(*, book: Book, thread_id: str) -> list[dict]:
    """Chapters whose front matter opens, advances or closes ``thread_id``, in chapter order.

    The lists are JSON; containment lookups on JSON differ between SQLite and PostgreSQL, so the
    three small columns are read for the whole book in one query and filtered here."""
    out = []
    rows = (
        Chapter.objects.filter(book=book)
        .order_by("number")
        .values_list("number", "title", "opens", "advances", "closes")
    )
    for number, title, opens, advances, closes in rows:
        for kind, ids in (("开启", opens), ("推进", advances), ("收尾", closes)):
            if thread_id in (ids or []):
                out.append({"chapter": number, "title": title, "kind": kind})
    return out


def thread_type_counts(*, book: Book) -> dict[str, dict[str, int]]:
    """Threads per type and status: {type: {status: n}} in one grouped query."""
    out: dict[str, dict[str, int]] = {}
    for type_, status, n in (
        Thread.objects.filter(book=book).values_list("type", "status").annotate(n=Count("id")).order_by("type")
    ):
        out.setdefault(type_, {})[status] = n
    return out


def fact_value_chains(*, book: Book, facts: list[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """Every value of each (category, subject, field) group the given facts belong to, oldest first,
    in one query (the value history of a page of facts)."""
    groups = {(f["category"], f["subject"], f["field"]) for f in facts}
    if not groups:
        return {}
    out: dict[tuple[str, str, str], list[dict]] = {}
    rows = (
        Fact.objects.filter(book=book, subject__in={s for _, s, _ in groups})
        .order_by("source_chapter", "key")
        .values_list("category", "subject", "field", "key", "value", "status", "source_chapter")
    )
    for category, subject, field, key, value, status, chapter in rows:
        if (category, subject, field) in groups:
            out.setdefault((category, subject, field), []).append(
                {"id": key, "value": value, "status": status, "source_chapter": chapter}
            )
    return out


def chapter_rows(*, book: Book, numbers: set[int]) -> dict[int, tuple[int, str]]:
    """(primary key, title) of the given chapters, in one query (for links to their admin pages)."""
    if not numbers:
        return {}
    rows = Chapter.objects.filter(book=book, number__in=numbers).values_list("number", "pk", "title")
    return {number: (pk, title) for number, pk, title in rows}


def fact_page(
    *,
    book: Book,
    category: str | None,
    status: str | None,
    text: str | None,
    page: int,
    per_page: int,
    fields: frozenset[str] = frozenset(),
) -> dict:
    """One page of the book's facts for the memory page: filtered (category, status, a text found in
    the subject, field or value, or one of ``fields``: the keys whose label holds it), by category (in the categories' order), contradicted and tentative
    first within one, then by subject and field;
    with the total and the page count (two queries)."""
    rows = Fact.objects.filter(book=book).select_related("superseded_by", "revises")
    if category:
        rows = rows.filter(category=category)
    if status:
        rows = rows.filter(status=status)
    if text:
        rows = rows.filter(
            Q(subject__icontains=text) | Q(field__icontains=text) | Q(value__icontains=text) | Q(field__in=fields)
        )

    def rank(field: str, order: list) -> Case:
        whens = (When(**{field: v}, then=Value(i)) for i, v in enumerate(order))
        return Case(*whens, default=Value(len(order)), output_field=IntegerField())

    total = rows.count()
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    ordered = rows.annotate(
        category_rank=rank("category", list(Fact.Category.values)), status_rank=rank("status", FACT_STATUS_ORDER)
    ).order_by("category_rank", "status_rank", "subject", "field", "source_chapter", "key")
    start = (page - 1) * per_page
    return {
        "facts": [fact_to_dict(f) for f in ordered[start : start + per_page]],
        "total": total,
        "page": page,
        "pages": pages,
        "start": start + 1 if total else 0,
        "end": min(start + per_page, total),
    }
