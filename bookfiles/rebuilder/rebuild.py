"""Full rebuild of a book from its folder, in one transaction."""

import os
from pathlib import Path
from typing import Any

from django.db import transaction

from bookfiles.conf import read_limits
from bookfiles.parser import ERROR, Issue, ParsedBook, book_read
from bookfiles.rebuilder import file_rows
from bookfiles.rebuilder.journal_replay import journal_replay
from core import writers as core_writers
from core.models import Book, Chapter
from entities.roster import roster_removal_preview
from kernel.exceptions import InvalidInput
from kernel.indexing import after_chapter_hooks_schedule, chapter_indexers_run
from threads.models import Secret, Thread

COUNT_KEYS = (
    "chapters",
    "volumes",
    "threads",
    "secrets",
    "entities",
    "aliases",
    "documents",
    "sections",
    "timeline_rows",
    "fingerprints",
    "words",
)


def report_new(*, slug: str, parsed: ParsedBook | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "book": slug,
        "title": parsed.config.title if parsed is not None else "",  # messages name a book by its title
        "ok": True,
        "errors": [],
        "warnings": [],
        "counts": dict.fromkeys(COUNT_KEYS, 0),
    }
    if parsed is not None:
        report["errors"] = [i.as_dict() for i in parsed.errors]
        report["warnings"] = [i.as_dict() for i in parsed.warnings]
        report["ok"] = not report["errors"]
    return report


def book_rebuild(*, root: Path, replace: bool = False) -> dict[str, Any]:
    """Rebuild every file-derived table of the book at ``root`` in one transaction. Errors (or an
    exception) leave the previous data untouched; curated entities (source ≠ file) always survive.

    An existing book is replaced only from its recorded folder and only when the rebuild keeps at least
    half of its chapters; otherwise the report carries a ``would_delete`` error saying what would go,
    and nothing changes, unless ``replace`` (``rebuild --replace``) says to go ahead."""
    root = Path(root)
    if not root.is_dir():
        raise InvalidInput(f"书籍文件夹不存在：{root}", extra={"root": str(root)})
    parsed = book_read(root, limits=read_limits())
    report = report_new(slug=parsed.config.slug, parsed=parsed)
    if not report["ok"]:
        return report
    book_parsed_write(parsed=parsed, report=report, replace=replace)
    return report


def _first(items: list, n: int = 5) -> str:
    shown = "、".join(str(i) for i in items[:n])
    return shown + (f" 等 {len(items)} 个" if len(items) > n else "")


def deletion_summary(*, book: Book, parsed: ParsedBook) -> dict[str, Any]:
    """What a rebuild of ``parsed`` over ``book`` would remove (read-only): chapter numbers, thread /
    secret ids, file entities deleted and those kept archived because ingested rows point at them."""
    from_db = {
        "chapters": set(Chapter.objects.filter(book=book).order_by().values_list("number", flat=True)),
        "threads": set(Thread.objects.filter(book=book).order_by().values_list("thread_id", flat=True)),
        "secrets": set(Secret.objects.filter(book=book).order_by().values_list("secret_id", flat=True)),
    }
    kept = {
        "chapters": {c.number for c in parsed.chapters},
        "threads": {t.thread_id for t in parsed.threads},
        "secrets": {s.secret_id for s in parsed.secrets},
    }
    summary: dict[str, Any] = {key: sorted(from_db[key] - kept[key]) for key in from_db}
    summary["chapters_before"] = len(from_db["chapters"])
    summary["entities_deleted"], summary["entities_archived"] = roster_removal_preview(
        book=book, names={e.name for e in parsed.entities}
    )
    return summary


def rebuild_guard(*, book: Book, parsed: ParsedBook) -> Issue | None:
    """The ``would_delete`` error when a rebuild of ``parsed`` is not the book's own folder or would drop
    more than half of its chapters; None when it may go ahead."""
    recorded = (book.root or "").strip()
    other_root = bool(recorded) and os.path.realpath(recorded) != os.path.realpath(parsed.root)
    summary = deletion_summary(book=book, parsed=parsed)
    removed, before = summary["chapters"], summary["chapters_before"]
    most = before > 0 and len(removed) * 2 > before
    if not (other_root or most):
        return None
    reasons = []
    if other_root:
        reasons.append(f"《{book.title or book.slug}》记录的文件夹是 {recorded}，本次重建的是 {parsed.root}")
    if most:
        reasons.append(f"将删除 {len(removed)}/{before} 章，超过一半")
    lost = [f"章节 {len(removed)}（第{_first(removed)}章）" if removed else "章节 0"]
    for key, label in (("threads", "线索"), ("secrets", "信息差"), ("entities_deleted", "实体")):
        if summary[key]:
            lost.append(f"{label} {len(summary[key])}（{_first(summary[key])}）")
    if summary["entities_archived"]:
        lost.append(
            f"另有 {len(summary['entities_archived'])} 个实体因有已录入的数据而保留并归档（{_first(summary['entities_archived'])}）"
        )
    return Issue(
        "would_delete",
        "book.yaml" if (parsed.root / "book.yaml").is_file() else ".",
        None,
        "拒绝重建：" + "；".join(reasons) + "。将删除：" + "，".join(lost) + "。确认替换请加 --replace",
        ERROR,
    )


@transaction.atomic
def book_parsed_write(*, parsed: ParsedBook, report: dict[str, Any], replace: bool = False) -> Book:
    """Write a parsed book (no errors) over the previous data of that book; unless ``replace``, a
    ``rebuild_guard`` refusal leaves everything as it was and is reported as an error."""
    config = parsed.config
    book = core_writers.book_lock(slug=config.slug, defaults={"root": str(parsed.root)})
    if not replace:
        refusal = rebuild_guard(book=book, parsed=parsed)
        if refusal is not None:
            report["ok"] = False
            report["errors"].append(refusal.as_dict())
            report["would_delete"] = deletion_summary(book=book, parsed=parsed)
            return book
    counts = report["counts"]
    written = file_rows.file_rows_write(
        book=book,
        rows=file_rows.FileRows(
            chapters=parsed.chapters,
            threads=parsed.threads,
            secrets=parsed.secrets,
            documents=parsed.documents,
            timeline=parsed.timeline,
            entities=parsed.entities,
            timeline_changes=file_rows.timeline_changes_of(parsed.timeline),
            files=parsed.files,
        ),
        counts=counts,
        volumes=lambda: core_writers.volumes_replace(
            book=book,
            volumes=file_rows.volumes_merge(
                config.volumes,
                (
                    (c.number, c.volume, c.folder_volume_name if c.folder_volume == c.volume else "")
                    for c in parsed.chapters
                ),
            ),
        ),
        baseline=config.style_baseline or (1, 0),
    )
    counts["words"], counts["fingerprints"], removed = written.words, counts["chapters"], written.removed_numbers
    report["warnings"] += [i.as_dict() for i in written.issues]
    core_writers.book_config_apply(book=book, root=str(parsed.root), config=config, report=report)
    # indexers see the finished core tables and the updated book row (thresholds, config)
    stored = len(report["warnings"])
    report["indexers"] = chapter_indexers_run(book=book, numbers=None, removed=removed, warnings=report["warnings"])
    if len(report["warnings"]) != stored:  # skipped manual tags join the stored report
        core_writers.book_report_save(book=book, report={**report, "warnings": list(report["warnings"])})
    # what agents and curators wrote (the folder's journal), over the finished file-derived rows
    report["journal"] = journal_replay(book=book, root=parsed.root, warnings=report["warnings"])
    report["hooks"] = after_chapter_hooks_schedule(book=book, numbers=None, removed=removed, report=report)
    return book
