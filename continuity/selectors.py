"""Reads of the continuity check: a draft against the canon as of the chapter before it, and the
finalized chapters K…M each against the one before it (after a retcon). Findings are computed on
every call, never stored; only waivers are kept (in the book folder, ``continuity.waivers``)."""

import errno
import hashlib
import os
from pathlib import Path
from typing import Any

from continuity.canon import Canon
from continuity.checks import BODY_CHECKS, ERROR, INFO, WARNING, Mentions, check_front_matter
from continuity.draft import Draft, DraftError, draft_parse
from continuity.waivers import waivers_apply, waivers_read
from core.models import Book, Chapter
from core.selectors import book_current_chapter, book_get
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import InvalidInput, NotFound
from kernel.safefs import OutsideRoot, regular_file_read

DRAFT_MAX_CHARS = 200_000
CHAPTER_MAX = NUMBER_MAX
CHAPTER_FILE_MAX_BYTES = 64 << 20
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


def _book(book: Book | str) -> Book:
    return book if isinstance(book, Book) else book_get(slug=book)


def _counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    counts = {ERROR: 0, WARNING: 0, INFO: 0, "waived": 0}
    for item in findings:
        counts["waived" if item["waived"] else item["severity"]] += 1
    return counts


def draft_findings(*, draft: Draft, canon: Canon, number: int) -> list[dict[str, Any]]:
    mentions = Mentions(draft, canon, number)
    findings: list[dict[str, Any]] = []
    for check in BODY_CHECKS:
        findings += check(draft, canon, mentions)
    findings += check_front_matter(draft, canon, mentions, chapter=number)
    findings.sort(key=lambda f: (f["line"], SEVERITY_ORDER[f["severity"]], f["kind"]))
    return findings


def _chapter_check(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= CHAPTER_MAX:
        raise InvalidInput(f"{name} 应为 1…{CHAPTER_MAX} 的章节号，实际为 {value!r}", extra={"field": name})
    return value


def draft_check(*, book: Book | str, text: str, chapter: int | None = None) -> dict[str, Any]:
    """Check a draft (Markdown with the chapter front matter) against the canon as of chapter N−1.

    N is ``chapter``, else the front matter's ``chapter:``, else the chapter after the book's last."""
    book = _book(book)
    if not isinstance(text, str):
        raise InvalidInput("草稿应为文本", extra={"field": "text"})
    if len(text) > DRAFT_MAX_CHARS:
        raise InvalidInput(
            f"草稿过长：{len(text)} 字符，上限 {DRAFT_MAX_CHARS}", extra={"field": "text", "length": len(text)}
        )
    if chapter is not None:
        _chapter_check(chapter, "chapter")
    try:
        draft = draft_parse(text)
    except DraftError as exc:
        raise InvalidInput(
            f"草稿第{exc.line or 1}行：{exc.message}", extra={"field": "text", "line": exc.line}
        ) from exc
    number = chapter or draft.chapter or (book_current_chapter(book=book) or 0) + 1
    canon = Canon(book=book)
    canon.advance(to=number - 1)
    findings = draft_findings(draft=draft, canon=canon, number=number)
    waivers, problems = waivers_read(root=book.root)
    waivers_apply(findings, number=number, waivers=waivers)
    return {
        "book": book.slug,
        "chapter": number,
        "as_of": number - 1,
        "counts": _counts(findings),
        "findings": findings,
        "problems": canon.rules.problems + problems,
    }


class ChapterFiles:
    """Reads a book's chapter files for one walk over many chapters, refusing any that resolves
    outside the book folder (as ``regular_file_read(root=…)`` does), with each folder resolved once:
    resolving the root and every folder of the path again for each of 3,000 chapters was a tenth of
    the range check."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self._folders: dict[str, str] = {}

    def read(self, relative: str) -> bytes:
        path = self.root / relative
        folder = str(path.parent)
        real_folder = self._folders.get(folder)
        if real_folder is None:
            real_folder = self._folders[folder] = os.path.realpath(folder)
        real = os.path.join(real_folder, path.name)
        if os.path.islink(real):
            real = os.path.realpath(real)
        if real != self.real_root and not real.startswith(self.real_root + os.sep):
            raise OutsideRoot(errno.EXDEV, f"指向书籍文件夹之外（{real}），拒绝读取")
        data, _ = regular_file_read(Path(real), max_bytes=CHAPTER_FILE_MAX_BYTES)
        return data


def chapter_draft(book: Book, row: Chapter, files: ChapterFiles | None = None) -> Draft:
    # The file is the truth (its lines are what the author edits); the stored body is the fallback
    # when the folder is gone. A file unchanged since the last sync (its sha256 is the row's
    # content_hash) keeps the front matter the database parsed from it: no second YAML load.
    if book.root and row.source_path:
        files = files or ChapterFiles(Path(book.root))
        try:
            data = files.read(row.source_path)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            pass
        else:
            same = bool(row.content_hash) and hashlib.sha256(data).hexdigest() == row.content_hash
            stored = row.front_matter if same and isinstance(row.front_matter, dict) else None
            return draft_parse(text, front_matter=stored)
    return draft_parse(row.body)


def chapters_check(*, book: Book | str, start: int, end: int | None = None) -> dict[str, Any]:
    """Check the finalized chapters ``start``…``end`` (default: the last), each against the canon as of the chapter before it."""
    book = _book(book)
    _chapter_check(start, "from")
    last = book_current_chapter(book=book)
    if last is None:
        raise NotFound(f"《{book.title or book.slug}》还没有定稿章节", extra={"book": book.slug})
    end = last if end is None else _chapter_check(end, "to")
    if end < start:
        raise InvalidInput(f"to（{end}）不能小于 from（{start}）", extra={"field": "to"})
    canon = Canon(book=book)
    waivers, problems = waivers_read(root=book.root)
    chapters, totals = [], {ERROR: 0, WARNING: 0, INFO: 0, "waived": 0}
    rows = Chapter.objects.filter(book=book, number__gte=start, number__lte=end).order_by("number")
    # what the check reads of a row: its file, hash and front matter (the body only when the file is gone)
    rows = rows.only("number", "source_path", "content_hash", "front_matter")
    files = ChapterFiles(Path(book.root)) if book.root else None
    for row in rows.iterator():
        canon.advance(to=row.number - 1)
        try:
            draft = chapter_draft(book, row, files)
        except DraftError as exc:
            problems.append(f"第{row.number}章（{row.source_path}）第{exc.line or 1}行：{exc.message}")
            continue
        findings = draft_findings(draft=draft, canon=canon, number=row.number)
        waivers_apply(findings, number=row.number, waivers=waivers)
        counts = _counts(findings)
        for key, value in counts.items():
            totals[key] += value
        if findings:
            chapters.append({"chapter": row.number, "file": row.source_path, "counts": counts, "findings": findings})
    return {
        "book": book.slug,
        "from": start,
        "to": end,
        "counts": totals,
        "chapters": chapters,
        "problems": canon.rules.problems + problems,
    }
