"""Writes of the continuity check: waivers, kept in the book folder (``continuity.waivers``)."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from continuity.checks import KINDS
from continuity.waivers import WAIVERS_FILE, waivers_dump, waivers_read
from core.locks import book_write_lock
from core.models import Book
from kernel.bounds import NUMBER_MAX
from kernel.exceptions import InvalidInput
from kernel.safefs import book_file_write

NOTE_MAX = 500
TERM_MAX = 200


@transaction.atomic
def waiver_add(*, book: Book, number: int, kind: str, term: str, note: str = "") -> dict[str, Any]:
    """Mark the findings of ``kind`` about ``term`` in ``number`` intended (这是有意安排); replaces an earlier waiver of the same."""
    if kind not in KINDS:
        raise InvalidInput(f"未知的机检类别 {kind!r}，可用：{'、'.join(KINDS)}", extra={"field": "kind"})
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= NUMBER_MAX:
        raise InvalidInput(f"chapter 应为 1…{NUMBER_MAX} 的章节号，实际为 {number!r}", extra={"field": "chapter"})
    term = str(term or "").strip()
    if not term or len(term) > TERM_MAX:
        raise InvalidInput(f"term 应为 1…{TERM_MAX} 字符（机检结果中的 term）", extra={"field": "term"})
    if len(note or "") > NOTE_MAX:
        raise InvalidInput(f"note 最多 {NOTE_MAX} 字符", extra={"field": "note"})
    if not book.root or not Path(book.root).is_dir():
        raise InvalidInput(f"书籍文件夹 {book.root!r} 不存在，无法写入豁免", extra={"field": "book"})
    book_write_lock(book=book)
    waivers, problems = waivers_read(root=book.root)
    if problems and (Path(book.root) / WAIVERS_FILE).exists():
        raise InvalidInput(f"{problems[0]}：请先修好该文件，以免覆盖", extra={"file": WAIVERS_FILE})
    waivers = [w for w in waivers if (w["chapter"], w["kind"], str(w["term"])) != (number, kind, term)]
    waiver = {
        "chapter": number,
        "kind": kind,
        "term": term,
        "note": note or "这是有意安排",
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    waivers.append(waiver)
    waivers.sort(key=lambda w: (w["chapter"], w["kind"], str(w["term"])))
    book_file_write(root=Path(book.root), relative=WAIVERS_FILE, text=waivers_dump(waivers))
    return {"file": WAIVERS_FILE, "waiver": waiver, "count": len(waivers)}
