"""The dashboard's window onto other apps' reads.

Each function here calls the owning app's selector and only reshapes field names, so a page never
carries its own copy of a domain query: a thread's hang is ``threads.selectors``' definition, a
secret's accumulation and leaks are theirs, the style baseline is ``core.selectors``', the pack
is ``memory.orchestrator``'s. Only public selectors are used (never a module's private helpers).
"""

from django.db.models import F

from core import selectors as core_selectors
from core.fingerprint import fingerprints_sum
from core.models import Book, Fingerprint
from memory.selectors import fact_list
from threads import selectors as thread_selectors
from threads.models import Secret


def book_cards() -> list[dict]:
    """Every book with its chapter count, word total and current chapter (``core.selectors.
    books_with_totals``: the one listing of books, one query)."""
    return [
        {
            "slug": b.slug,
            "title": b.title or b.slug,
            "genre": b.genre,
            "chapters": b.n_chapters,
            "words": b.words or 0,
            "current_chapter": b.current,
            "built_at": b.built_at,
        }
        for b in core_selectors.books_with_totals()
    ]


def threads_open(*, book: Book) -> list[dict]:
    """Open threads with how long each has hung and its type's threshold (``threads.selectors.
    thread_hangs``: chapters since the latest opening, advance or 履历 citation, or past the planned
    end; computed now)."""
    return [
        {
            "thread_id": row["id"],
            "type": row["type"],
            "title": row["title"],
            "strength": row["strength"],
            "opened_chapter": row["opened_chapter"],
            "planned_end": f"第{row['planned_end_volume']}卷" if row["planned_end_volume"] else row["planned_end"],
            "planned_end_chapter": row["planned_end_chapter"],
            "planned_end_note": row["planned_end_note"],
            "last_chapter": row["last_activity_chapter"],
            "hang": row["hang"] or 0,
            "threshold": row["threshold"],
            "overdue": row["overdue"],
            "overdue_reason": row["overdue_reason"],
            "overdue_after": thread_selectors.thread_hang_limit(
                last_activity=row["last_activity_chapter"], threshold=row["threshold"]
            ),
        }
        for row in thread_selectors.thread_list_open_with_hang(book=book)["threads"]
    ]


LEAKS_SHOWN = 200  # a long book can have thousands of findings; the first ones in chapter order are listed


def secrets_overview(*, book: Book, scan_leaks: bool) -> dict:
    """Every secret with who knows it since when, plus accumulation (reader-unknown secrets) and,
    when asked, the leak scan, all from ``threads.selectors``. The scan reads every chapter body once
    (~0.2 s on 300 chapters, ~1 s on 3,000), so the page still runs it on request."""
    rows = []
    for secret in Secret.objects.filter(book=book).order_by("secret_id"):
        rows.append(
            {
                "secret_id": secret.secret_id,
                "title": secret.title,
                "content": secret.content,
                "knowers": thread_selectors.secret_known_to(secret=secret),
                "reader_knows": secret.reader_knows,
                "reader_told_chapter": secret.reader_told_chapter,
                "registered_chapter": secret.registered_chapter,
                "keywords": list(secret.keywords or ()),
            }
        )
    return {
        "secrets": rows,
        "accumulation": thread_selectors.report_secret_accumulation(book=book),
        "leaks": thread_selectors.leak_scan(book=book, limit=LEAKS_SHOWN) if scan_leaks else None,
    }


CONTRADICTED_COUNTED = 2000  # fact_list's largest page; a book with more shows "2000+"


def contradicted_count(*, book: Book) -> str:
    """How many memory facts are contradicted (awaiting a decision in the admin), as text."""
    n = len(fact_list(book=book, status="contradicted", limit=CONTRADICTED_COUNTED))
    return f"{n}+" if n >= CONTRADICTED_COUNTED else str(n)


def style_series(*, book: Book, window: int) -> dict:
    """Each style feature over consecutive ``window``-chapter ranges, with ``style_drift``'s baseline
    and verdict. The ratios use ``core.selectors``' feature definitions; the per-chapter raw
    counts are read in one query and summed per range (raw counts aggregate exactly)."""
    drift = core_selectors.style_drift(book=book)
    per_chapter = (
        Fingerprint.objects.filter(book=book, start_chapter=F("end_chapter"))
        .order_by("start_chapter")
        .values_list("start_chapter", "features")
    )
    ranges: dict[int, list[tuple[int, dict]]] = {}
    for chapter, features in per_chapter:
        ranges.setdefault((chapter - 1) // window, []).append((chapter, features))
    series: dict[str, list[tuple[int, float]]] = {name: [] for name in core_selectors.STYLE_FEATURE_NAMES}
    labels = []
    for key in sorted(ranges):
        chapters = [c for c, _ in ranges[key]]
        start, end = min(chapters), max(chapters)
        derived = core_selectors.fingerprint_features_derive(totals=fingerprints_sum([f for _, f in ranges[key]]))
        labels.append((start, end))
        for name, value in derived.items():
            series[name].append((end, value))
    return {"drift": drift, "series": series, "ranges": labels, "window": window}
