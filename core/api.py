"""REST endpoints of the core: books, chapters, outlines, timelines, settings, search, reports.

Each endpoint is a thin adapter over the selector that ``core/interfaces.py`` registers
for the ``story`` command, so both front doors give the same answer. Text reads return a JSON
string. Errors are domain exceptions turned into ``{"message", "extra"}`` by ``webnovel.api``.
"""

from django.http import HttpRequest
from ninja import Router

from core import schemas, search, selectors
from core.auth import rate_check
from core.schemas import documented
from core.selectors import CHARS_DEFAULT, CHARS_MAX, RANGE_MAX, RECENT_DEFAULT, RECENT_MAX, book_get

router = Router(tags=["书籍"])

# Limits the selectors enforce, stated in the OpenAPI schema (see ``documented``).
Chapter = documented(int, minimum=1)
Chars = documented(int, minimum=1, maximum=CHARS_MAX)
Count = documented(int, minimum=1, maximum=RECENT_MAX)
Last = documented(int, nullable=True, minimum=1, maximum=RANGE_MAX * 10)
SearchLimit = documented(int, minimum=1, maximum=search.SEARCH_MAX_LIMIT)
SearchQuery = documented(str, minLength=1, maxLength=search.QUERY_MAX_LENGTH)
Pattern = documented(str, minLength=1, maxLength=search.REGEX_MAX_LENGTH)


@router.get("", response=list[schemas.BookOut], summary="列出所有书")
def book_list(request: HttpRequest) -> list[dict]:
    """All books on this server with their chapter count and current (highest finalized) chapter.
    A key scoped to one book sees only that book."""
    books = selectors.book_list()
    scoped_to = getattr(request.auth, "book_id", None)  # an ApiKey (a session user has no book_id)
    if scoped_to is not None:
        slug = request.auth.book.slug
        books = [b for b in books if b["slug"] == slug]
    return books


# ── chapters (literal paths before {number}: "summaries" would match it) ──


@router.get("{book}/chapters", response=list[schemas.ChapterRowOut], tags=["章节"], summary="按章节定位列出章节")
def chapter_list(request: HttpRequest, book: str, position: str | None = None, volume: int | None = None):
    """Chapters with a given chapter_position (推进 / 过渡 / 日常; all when omitted), optionally in one volume."""
    return selectors.chapter_list(book=book_get(slug=book), position=position, volume=volume)


@router.get(
    "{book}/chapters/summaries", response=list[schemas.ChapterSummaryOut], tags=["章节"], summary="章节范围的摘要"
)
def chapter_summaries(request: HttpRequest, book: str, start: Chapter, end: Chapter):
    """The summary of every finalized chapter in [start, end] (at most 500 chapters)."""
    return selectors.chapter_summaries(book=book_get(slug=book), start=start, end=end)


@router.get(
    "{book}/chapters/recent-tails", response=list[schemas.ChapterTailOut], tags=["章节"], summary="最近 N 章的结尾"
)
def chapter_recent_tails(
    request: HttpRequest,
    book: str,
    count: Count = RECENT_DEFAULT,
    chars: Chars = CHARS_DEFAULT,
    before: int | None = None,
):
    """The last ``chars`` characters of each of the ``count`` chapters before ``before`` (default: the newest), oldest first."""
    return selectors.chapter_recent_tails(book=book_get(slug=book), count=count, chars=chars, before=before)


@router.get("{book}/chapters/{number}", response=schemas.ChapterMetaOut, tags=["章节"], summary="章节 front matter")
def chapter_meta(request: HttpRequest, book: str, number: int):
    """A chapter's front matter."""
    return selectors.chapter_meta(book=book_get(slug=book), number=number)


@router.get("{book}/chapters/{number}/body", response=str, tags=["章节"], summary="章节正文")
def chapter_body(request: HttpRequest, book: str, number: int):
    """A chapter's body without front matter."""
    return selectors.chapter_body(book=book_get(slug=book), number=number)


@router.get("{book}/chapters/{number}/tail", response=str, tags=["章节"], summary="章节最后 N 字")
def chapter_tail(request: HttpRequest, book: str, number: int, chars: Chars = CHARS_DEFAULT):
    """The last ``chars`` characters of a chapter's body."""
    return selectors.chapter_tail(book=book_get(slug=book), number=number, chars=chars)


@router.get("{book}/chapters/{number}/head", response=str, tags=["章节"], summary="章节前 N 字")
def chapter_head(request: HttpRequest, book: str, number: int, chars: Chars = CHARS_DEFAULT):
    """The first ``chars`` characters of a chapter's body."""
    return selectors.chapter_head(book=book_get(slug=book), number=number, chars=chars)


@router.get("{book}/chapters/{number}/summary", response=str, tags=["章节"], summary="章节摘要")
def chapter_summary(request: HttpRequest, book: str, number: int):
    """A chapter's summary."""
    return selectors.chapter_summary(book=book_get(slug=book), number=number)


# ── outlines and volumes ──


@router.get("{book}/outline/section", response=str, tags=["大纲"], summary="总纲小节")
def outline_section(request: HttpRequest, book: str, heading: str):
    """A ``##`` section of the 总纲."""
    return selectors.outline_section(book=book_get(slug=book), heading=heading)


@router.get("{book}/outline/ending", response=str, tags=["大纲"], summary="总纲结局")
def outline_ending(request: HttpRequest, book: str):
    """The 总纲's ``## 结局`` section."""
    return selectors.outline_ending(book=book_get(slug=book))


@router.get("{book}/volumes", response=list[schemas.VolumeOut], tags=["大纲"], summary="列出各卷")
def volume_list(request: HttpRequest, book: str):
    """Volumes: number, name, chapter range and finalized chapter count."""
    return selectors.volume_list(book=book_get(slug=book))


@router.get("{book}/volumes/{volume}/outline", response=str, tags=["大纲"], summary="整卷卷纲")
def volume_outline(request: HttpRequest, book: str, volume: int):
    """A volume's whole 卷纲."""
    return selectors.volume_outline(book=book_get(slug=book), volume=volume)


@router.get("{book}/volumes/{volume}/outline/section", response=str, tags=["大纲"], summary="卷纲小节")
def volume_outline_section(request: HttpRequest, book: str, volume: int, heading: str):
    """A ``##`` section of a volume's 卷纲."""
    return selectors.volume_outline_section(book=book_get(slug=book), volume=volume, heading=heading)


# ── timelines ──


@router.get("{book}/timeline/current", response=schemas.TimelineOut, tags=["时间线"], summary="当前卷时间线")
def timeline_current(request: HttpRequest, book: str):
    """The timeline of the volume of the highest finalized chapter."""
    return selectors.timeline_current(book=book_get(slug=book))


@router.get(
    "{book}/timeline/recent", response=list[schemas.TimelineOut], tags=["时间线"], summary="上一卷与当前卷时间线"
)
def timeline_recent(request: HttpRequest, book: str):
    """The previous and the current volume's timelines, oldest first."""
    return selectors.timeline_recent(book=book_get(slug=book))


@router.get("{book}/timeline/volumes/{volume}", response=schemas.TimelineOut, tags=["时间线"], summary="指定卷时间线")
def timeline_volume(request: HttpRequest, book: str, volume: int):
    """A volume's timeline."""
    return selectors.timeline_volume(book=book_get(slug=book), volume=volume)


# ── settings ──


@router.get("{book}/worldview/section", response=str, tags=["设定"], summary="世界观小节")
def worldview_section(request: HttpRequest, book: str, heading: str):
    """A ``##`` section of the worldview."""
    return selectors.worldview_section(book=book_get(slug=book), heading=heading)


# ── search ──


@router.get("{book}/search", response=schemas.KeywordSearchOut, tags=["搜索"], summary="关键词搜索")
def search_keyword(request: HttpRequest, book: str, q: SearchQuery, limit: SearchLimit = search.SEARCH_DEFAULT_LIMIT):
    """Lines containing ``q`` over the whole book: chapter, line, context."""
    return search.search_keyword(book=book_get(slug=book), q=q, limit=limit)


@router.get(
    "{book}/search/regex",
    response=schemas.RegexSearchOut,
    tags=["搜索"],
    summary="正则搜索",
    openapi_extra={
        "responses": {"429": {"description": "正则搜索过于频繁（每个密钥 / 账号的次数上限，见 Retry-After）"}}
    },
)
def search_regex(request: HttpRequest, book: str, pattern: Pattern, limit: SearchLimit = search.SEARCH_DEFAULT_LIMIT):
    """Lines matching a regular expression; a bad, too long or too slow pattern is a 422. Each caller
    (key or login) may run ``WEBNOVEL_REGEX_RATE`` searches (default 60 a minute per worker process): 429 past it."""
    rate_check(request, setting="WEBNOVEL_REGEX_RATE", what="正则搜索")
    return search.search_regex(book=book_get(slug=book), pattern=pattern, limit=limit)


# ── reports ──


@router.get("{book}/reports/style-drift", response=schemas.StyleDriftOut, tags=["报告"], summary="文风漂移")
def style_drift(request: HttpRequest, book: str, last: Last = None):
    """The last K chapters' style against the book.yaml baseline, feature by feature."""
    return selectors.style_drift(book=book_get(slug=book), last=last)


@router.get("{book}/reports/weak-hooks", response=schemas.WeakHooksOut, tags=["报告"], summary="连续弱钩子")
def weak_hooks(request: HttpRequest, book: str):
    """The trailing streak of weak hooks."""
    return selectors.weak_hook_streak(book=book_get(slug=book))


@router.get("{book}/reports/stats", response=schemas.BookStatsOut, tags=["报告"], summary="全书统计")
def book_stats(request: HttpRequest, book: str):
    """Chapters, characters of text, threads, secrets, entities."""
    return selectors.book_stats(book=book_get(slug=book))
