"""Full rebuild of a book from its folder, in one transaction."""

from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from threads.models import Secret, Thread
from webnovel.bookfs import ParsedBook, book_read
from webnovel.exceptions import InvalidInput
from webnovel.indexing import after_chapter_hooks_schedule, chapter_indexers_run
from webnovel.models import Book, Chapter, Document, Fingerprint, SourceFile, TimelineRow
from webnovel.models.book import DEFAULT_THRESHOLDS
from webnovel.rebuilder import rows

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


def book_lock(*, slug: str, defaults: dict[str, Any]) -> Book:
    """Get or create the book row and take the book's writer lock (webnovel/locks.py) until the
    transaction ends, so a rebuild / sync never interleaves with any other writer of the book."""
    book = Book.objects.select_for_update(no_key=True).filter(slug=slug).first()
    if book is not None:
        return book
    try:
        with transaction.atomic():  # a savepoint: a concurrent first rebuild may win the insert
            Book.objects.create(slug=slug, **defaults)
    except IntegrityError:
        pass
    return Book.objects.select_for_update(no_key=True).get(slug=slug)


def book_rebuild(*, root: Path) -> dict[str, Any]:
    """Rebuild every file-derived table of the book at ``root`` in one transaction. Errors (or an
    exception) leave the previous data untouched; curated entities (source ≠ file) always survive."""
    root = Path(root)
    if not root.is_dir():
        raise InvalidInput(f"书籍文件夹不存在：{root}", extra={"root": str(root)})
    parsed = book_read(root)
    report = report_new(slug=parsed.config.slug, parsed=parsed)
    if not report["ok"]:
        return report
    book_parsed_write(parsed=parsed, report=report)
    return report


@transaction.atomic
def book_parsed_write(*, parsed: ParsedBook, report: dict[str, Any]) -> Book:
    """Write a parsed book (no errors) over the previous data of that book."""
    config = parsed.config
    book = book_lock(slug=config.slug, defaults={"root": str(parsed.root)})
    previous = set(Chapter.objects.filter(book=book).order_by().values_list("number", flat=True))
    for model in (Chapter, Fingerprint, Thread, Secret, Document, TimelineRow, SourceFile):
        # only("pk"): tables with children are collected before deletion; skip decoding their JSON
        model.objects.filter(book=book).only("pk").delete()
    counts = report["counts"]
    counts["chapters"], counts["words"] = rows.chapters_create(book=book, chapters=parsed.chapters)
    counts["fingerprints"] = counts["chapters"]
    counts["volumes"] = rows.volumes_replace(
        book=book,
        volumes=rows.volumes_merge(
            config.volumes,
            (
                (c.number, c.volume, c.folder_volume_name if c.folder_volume == c.volume else "")
                for c in parsed.chapters
            ),
        ),
    )
    counts["threads"] = rows.threads_create(book=book, threads=parsed.threads)
    counts["secrets"] = rows.secrets_create(book=book, secrets=parsed.secrets)
    counts["documents"], counts["sections"] = rows.documents_create(book=book, documents=parsed.documents)
    counts["timeline_rows"] = rows.timeline_create(book=book, rows=parsed.timeline)
    counts["entities"], counts["aliases"], entity_issues = rows.entities_write(book=book, entities=parsed.entities)
    report["warnings"] += [i.as_dict() for i in entity_issues]
    rows.source_files_create(book=book, files=parsed.files)
    book.root = str(parsed.root)
    book.title = config.title[:200]
    book.genre = config.genre[:100]
    book.config = config.config
    book.thresholds = {**DEFAULT_THRESHOLDS, **config.thresholds}
    book.style_baseline_start, book.style_baseline_end = config.style_baseline or (None, None)
    book.built_at = timezone.now()
    book.build_report = dict(report)
    book.save()
    # indexers see the finished core tables and the updated book row (thresholds, config)
    removed = sorted(previous - {c.number for c in parsed.chapters})
    report["indexers"] = chapter_indexers_run(book=book, numbers=None, removed=removed)
    report["hooks"] = after_chapter_hooks_schedule(book=book, numbers=None, removed=removed, report=report)
    return book
