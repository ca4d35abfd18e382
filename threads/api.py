"""REST endpoints of the threads app (mounted under /api/books/): threads, secrets and their reports.

Thin adapters over ``threads.selectors`` — the same functions ``threads/interfaces.py`` registers
for the ``story`` command. Literal paths come before ``{thread_id}`` / ``{secret_id}``.
"""

from django.http import HttpRequest
from ninja import Router

from core.schemas import documented
from core.selectors import book_get
from threads import schemas, selectors

router = Router(tags=["线索与信息差"])

# Choices and limits the selectors enforce, stated in the OpenAPI schema (see ``documented``).
ThreadType = documented(str, enum=list(selectors.THREAD_TYPES))
ThreadStrength = documented(str, enum=list(selectors.THREAD_STRENGTHS))
ThreadStatus = documented(str, nullable=True, enum=list(selectors.THREAD_STATUSES))
LeakLimit = documented(int, minimum=1, maximum=selectors.LEAK_MAX_LIMIT)


@router.get("{book}/threads", response=list[schemas.ThreadRowOut], summary="按类型列出线索")
def thread_list(request: HttpRequest, book: str, type: ThreadType, status: ThreadStatus = None):
    """Threads of one type (伏笔 / 悬念 / 感情线), optionally with one status (进行 / 已收尾 / 已放弃)."""
    return selectors.thread_list(book=book_get(slug=book), type=type, status=status)


@router.get("{book}/threads/overdue", response=schemas.OverdueOut, summary="超期线索")
def thread_list_overdue(request: HttpRequest, book: str):
    """Open threads that have hung longer than their type's threshold (computed now)."""
    return selectors.thread_list_overdue(book=book_get(slug=book))


@router.get("{book}/threads/by-strength", response=list[schemas.ThreadRowOut], summary="按强度列出线索")
def thread_list_by_strength(request: HttpRequest, book: str, strength: ThreadStrength, status: ThreadStatus = None):
    """Threads of one strength (高 / 中 / 低), optionally with one status."""
    return selectors.thread_list_by_strength(book=book_get(slug=book), strength=strength, status=status)


@router.get("{book}/threads/{thread_id}", response=schemas.ThreadBasicsOut, summary="线索基本信息")
def thread_basics(request: HttpRequest, book: str, thread_id: str):
    """Strength, status, opened chapter, planned end, and how long it has hung."""
    return selectors.thread_basics(book=book_get(slug=book), thread_id=thread_id)


@router.get("{book}/threads/{thread_id}/history", response=schemas.ThreadHistoryOut, summary="线索履历")
def thread_history(request: HttpRequest, book: str, thread_id: str):
    """A thread's 履历, by chapter."""
    return selectors.thread_history(book=book_get(slug=book), thread_id=thread_id)


@router.get("{book}/threads/{thread_id}/closing-plan", response=str, summary="线索收尾计划")
def thread_closing_plan(request: HttpRequest, book: str, thread_id: str):
    """A thread's 收尾计划."""
    return selectors.thread_closing_plan(book=book_get(slug=book), thread_id=thread_id)


@router.get("{book}/threads/{thread_id}/description", response=str, summary="线索描述")
def thread_description(request: HttpRequest, book: str, thread_id: str):
    """A thread's 描述."""
    return selectors.thread_description(book=book_get(slug=book), thread_id=thread_id)


@router.get("{book}/secrets/unknown", response=schemas.SecretUnknownOut, summary="读者未知的信息差")
def secret_list_unknown(request: HttpRequest, book: str):
    """Secrets the reader does not know, with how many chapters each has accumulated."""
    return selectors.secret_list_unknown(book=book_get(slug=book))


@router.get("{book}/secrets/{secret_id}", response=schemas.SecretBasicsOut, summary="信息差基本信息")
def secret_basics(request: HttpRequest, book: str, secret_id: str):
    """Who knows, whether the reader knows, keywords."""
    return selectors.secret_basics(book=book_get(slug=book), secret_id=secret_id)


@router.get("{book}/secrets/{secret_id}/content", response=str, summary="信息差内容")
def secret_content(request: HttpRequest, book: str, secret_id: str):
    """The secret itself."""
    return selectors.secret_content(book=book_get(slug=book), secret_id=secret_id)


@router.get("{book}/reports/overdue", response=schemas.OverdueReportOut, tags=["报告"], summary="超期线索（按类型）")
def report_overdue(request: HttpRequest, book: str):
    """Overdue threads grouped by type."""
    return selectors.report_overdue(book=book_get(slug=book))


@router.get("{book}/reports/secrets", response=schemas.SecretReportOut, tags=["报告"], summary="信息差积压")
def report_secrets(request: HttpRequest, book: str):
    """Secret accumulation: reader-unknown secrets, longest first, and those over the limit."""
    return selectors.report_secret_accumulation(book=book_get(slug=book))


@router.get(
    "{book}/reports/thread-activity/{volume}",
    response=schemas.ThreadActivityOut,
    tags=["报告"],
    summary="卷内线索活动",
)
def report_thread_activity(request: HttpRequest, book: str, volume: int):
    """Threads opened / advanced / closed inside a volume."""
    return selectors.report_thread_activity(book=book_get(slug=book), volume=volume)


@router.get("{book}/reports/leaks", response=schemas.LeakScanOut, tags=["报告"], summary="泄密扫描")
def leak_scan(
    request: HttpRequest, book: str, secret: str | None = None, limit: LeakLimit = selectors.LEAK_DEFAULT_LIMIT
):
    """Chapters where a secret's keywords occur before the reader is told, or under an unaware point of view."""
    return selectors.leak_scan(book=book_get(slug=book), secret=secret, limit=limit)
