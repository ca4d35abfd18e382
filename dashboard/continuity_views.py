"""The continuity check's findings page (机检): a draft pasted into a form, and the re-check of
finalized chapters over a range (default: the last 20).

Both answers come from ``continuity.selectors`` (``draft_check``, ``chapters_check``) and are only
shaped here: findings grouped by severity, waived ones folded apart, each evidence's chapter linked
to its admin page when that chapter is in the database. The draft is a POST (Django's CSRF check)
because a chapter does not fit in a URL; it writes nothing. Bad input — a chapter that is not a
number, a range that runs backwards, a draft too long or with broken front matter — is a Chinese
message on the page with the form kept (status 422), never a 500. The draft check is counted against
``WEBNOVEL_CONTINUITY_RATE`` like REST's and MCP's, one budget per user (429 with Retry-After past it).
"""

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from continuity.api import CONTINUITY_RATE
from continuity.selectors import CHAPTER_MAX, DRAFT_MAX_CHARS, chapters_check, draft_check
from core.auth import rate_count, user_caller
from core.models import Book
from core.selectors import book_current_chapter, book_get
from dashboard import selectors
from dashboard.views import _book_context, page
from kernel.exceptions import InvalidInput, RateLimited

RECHECK_DEFAULT = 20
# A long book's generated names can give a chapter hundreds of findings: the page shows the first ones
# of each chapter (errors first) and says how many more there are; the command and REST give them all.
FINDINGS_SHOWN = 20
SEVERITIES = [("error", "错误"), ("warning", "警告"), ("info", "提示")]
SEVERITY_NAMES = dict(SEVERITIES)
# The findings quote entity states, threads and secrets: the page asks for the permissions of all three.
PERMISSIONS = ("entities.view_entity", "threads.view_thread", "threads.view_secret")


def _number(raw: str, name: str, label: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{label}必须是整数，收到 '{raw[:20]}'", extra={"field": name}) from exc
    if not 1 <= value <= CHAPTER_MAX:
        raise InvalidInput(f"{label}应在 1…{CHAPTER_MAX} 之间，收到 {value}", extra={"field": name})
    return value


def _chapter_links(book: Book, numbers: set[int]) -> dict[int, dict[str, str]]:
    rows = selectors.chapter_rows(book=book, numbers=numbers)
    links = {}
    for number, (pk, title) in rows.items():
        try:
            href = reverse("admin:webnovel_chapter_change", args=[pk])
        except NoReverseMatch:
            href = ""
        links[number] = {"href": href, "title": title}
    return links


def _evidence_chapters(findings: list[dict[str, Any]]) -> set[int]:
    return {
        f["evidence"]["chapter"]
        for f in findings
        if isinstance(f.get("evidence"), dict) and isinstance(f["evidence"].get("chapter"), int)
    }


def _shape(findings: list[dict[str, Any]], links: dict[int, dict[str, str]], *, limit: int) -> dict[str, Any]:
    """Findings split into severity groups (errors first) and the waived ones, each with its evidence
    chapter's link and title; at most ``limit`` open and ``limit`` waived ones, ``hidden`` counts the rest."""
    for f in findings:
        evidence = f.get("evidence") if isinstance(f.get("evidence"), dict) else {}
        chapter = evidence.get("chapter")
        link = links.get(chapter, {}) if isinstance(chapter, int) else {}
        f["severity_name"] = SEVERITY_NAMES.get(f["severity"], f["severity"])
        f["ev"] = {
            "fact": evidence.get("fact", ""),
            "chapter": chapter,
            "file": evidence.get("file") or "",
            "line": evidence.get("line"),
            "href": link.get("href", ""),
            "title": link.get("title", ""),
        }
    groups, room = [], limit
    for severity, name in SEVERITIES:
        shown = [f for f in findings if f["severity"] == severity and not f["waived"]][:room]
        room -= len(shown)
        if shown:
            groups.append({"severity": severity, "name": name, "findings": shown})
    waived = [f for f in findings if f["waived"]]
    hidden = len(findings) - len(waived) - (limit - room) + max(0, len(waived) - limit)
    return {"groups": groups, "waived": waived[:limit], "waived_total": len(waived), "hidden": hidden}


def _recheck(request: HttpRequest, book: Book, last: int | None) -> dict[str, Any]:
    """The re-check section: its form values, and its answer or the reason there is none."""
    start_raw, end_raw = request.GET.get("start", ""), request.GET.get("end", "")
    out: dict[str, Any] = {"start_raw": start_raw, "end_raw": end_raw, "result": None, "error": "", "empty": ""}
    if last is None:
        out["empty"] = f"《{book.title or book.slug}》还没有定稿章节。"
        return out
    try:
        end = _number(end_raw, "end", "结束章") or last
        start = _number(start_raw, "start", "起始章") or max(1, min(end, last) - RECHECK_DEFAULT + 1)
        if end < start:
            raise InvalidInput(f"结束章（{end}）不能小于起始章（{start}）", extra={"field": "end"})
        result = chapters_check(book=book, start=start, end=end)
    except InvalidInput as exc:
        out["error"] = exc.message
        return out
    findings = [f for c in result["chapters"] for f in c["findings"]]
    links = _chapter_links(book, _evidence_chapters(findings) | {c["chapter"] for c in result["chapters"]})
    for c in result["chapters"]:
        c.update(_shape(c["findings"], links, limit=FINDINGS_SHOWN))
        c["link"] = links.get(c["chapter"], {})
        c["open"] = c["counts"]["error"] + c["counts"]["warning"] + c["counts"]["info"]
    out.update(result=result, start_raw=start_raw or str(start), end_raw=end_raw or str(end))
    return out


@page(*PERMISSIONS)
def continuity_page(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    last = book_current_chapter(book=book)
    ctx = _book_context(book, "continuity")
    ctx.update(draft_max=DRAFT_MAX_CHARS, recheck_default=RECHECK_DEFAULT, last_chapter=last)
    status, retry_after = 200, None
    if request.method == "POST":
        text = request.POST.get("text", "")
        chapter_raw = request.POST.get("chapter", "")
        ctx.update(text=text, chapter_raw=chapter_raw, posted=True)
        try:
            # counted like REST's and MCP's draft check: one budget per user across doors (issue 25)
            rate_count(caller=user_caller(request.user), setting=CONTINUITY_RATE[0], what=CONTINUITY_RATE[1])
            if not text.strip():
                raise InvalidInput("草稿为空：请粘贴章节全文（连同开头 --- 之间的章节信息）", extra={"field": "text"})
            chapter = _number(chapter_raw, "chapter", "章节号")
            result = draft_check(book=book, text=text, chapter=chapter)
        except (InvalidInput, RateLimited) as exc:
            ctx["draft_error"] = exc.message
            status = exc.status_code
            retry_after = getattr(exc, "retry_after", None)
        else:
            links = _chapter_links(book, _evidence_chapters(result["findings"]))
            shaped = _shape(result["findings"], links, limit=FINDINGS_SHOWN * 5)
            ctx.update(draft=result, **{f"draft_{k}": v for k, v in shaped.items()})
        # the re-check is not repeated under a posted draft: one answer per request
        ctx["recheck"] = None
    else:
        recheck = _recheck(request, book, last)
        ctx["recheck"] = recheck
        if recheck["error"]:
            status = 422
    response = render(request, "dashboard/continuity.html", ctx, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response
