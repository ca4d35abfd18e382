"""Writers of the core rows derived from the book folder: books, chapters and their fingerprints, volumes,
documents and sections, timeline rows, source files.

Called by the book-files rebuilder (rebuild, finalize, sync) inside its transaction, with the book's
writer lock held (``book_lock``); none opens a transaction of its own, so a rebuild stays one
transaction. Each writer works in bulk (plain-row inserts of ``kernel.bulk`` or ``bulk_create`` in
batches, one delete per table) and never issues a query per row.

The rows come from the parser's dataclasses; this app may not import the book-files app above it, so
each writer names the attributes it reads as a ``Protocol`` (``ParsedChapter``, …), which the parser's
dataclasses satisfy as they are: no copy, no conversion.
"""

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.fingerprint import fingerprint_compute
from core.models import Book, Chapter, Document, Fingerprint, Section, SourceFile, TimelineRow, Volume
from core.models.book import DEFAULT_THRESHOLDS
from kernel.bulk import rows_insert

BATCH = 500


class ParsedChapter(Protocol):
    number: int
    volume: int | None
    title: str
    perspective: str
    story_time: str
    chapter_position: str
    hook_type: str
    mood_position: str
    summary: str
    key_chapter: bool
    opens: list[str]
    advances: list[str]
    closes: list[str]
    front_matter: dict[str, Any]
    body: str
    entity_tags: list[dict[str, Any]]
    word_count: int
    path: str
    sha256: str


class ParsedVolume(Protocol):
    number: int
    name: str
    start_chapter: int | None
    end_chapter: int | None


class ParsedSection(Protocol):
    order: int
    heading: str
    body: str
    level: int


class ParsedDocument(Protocol):
    kind: str
    key: str
    path: str
    title: str
    front_matter: dict[str, Any]
    body: str

    @property
    def sections(self) -> Sequence[ParsedSection]: ...


class ParsedTimelineRow(Protocol):
    volume: int
    order: int
    path: str
    chapter: int | None
    story_time: str
    event: str
    present: list[str]


class ParsedSourceFile(Protocol):
    path: str
    kind: str
    sha256: str
    size: int
    mtime_ns: int | None


class ParsedConfig(Protocol):
    title: str
    genre: str
    config: dict[str, Any]
    thresholds: dict[str, int]
    style_baseline: tuple[int, int] | None


def book_lock(*, slug: str, defaults: dict[str, Any]) -> Book:
    """Get or create the book row and take the book's writer lock (core/locks.py) until the
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


def book_config_apply(*, book: Book, root: str, config: ParsedConfig, report: dict[str, Any]) -> None:
    """Save book.yaml's values and the build report on the book row (a rebuild's last write)."""
    book.root = root
    book.title = config.title[:200]
    book.genre = config.genre[:100]
    book.config = config.config
    book.thresholds = {**DEFAULT_THRESHOLDS, **config.thresholds}
    book.style_baseline_start, book.style_baseline_end = config.style_baseline or (None, None)
    book.built_at = timezone.now()
    book.build_report = dict(report)
    book.save()


def book_report_save(*, book: Book, report: dict[str, Any]) -> None:
    """Replace the stored build report (warnings added by the indexers after ``book_config_apply``)."""
    book.build_report = report
    book.save(update_fields=["build_report"])


def chapters_replace(
    *,
    book: Book,
    chapters: Sequence[ParsedChapter],
    paths: list[str] | None = None,
    baseline: tuple[int, int] | None = None,
) -> tuple[int, int, list[int]]:
    """Replace the chapters read from ``paths`` (every chapter of the book when None) and their
    fingerprints by ``chapters``. Returns (chapters written, words, numbers that no chapter has any more)."""
    old = Chapter.objects.filter(book=book)
    if paths is not None:
        old = old.filter(source_path__in=paths)
    old_numbers = set(old.order_by().values_list("number", flat=True))
    new_numbers = {c.number for c in chapters}
    if paths is None:
        # only("pk"): tables with children are collected before deletion; skip decoding their JSON
        Chapter.objects.filter(book=book).only("pk").delete()
        Fingerprint.objects.filter(book=book).only("pk").delete()
    else:
        Chapter.objects.filter(book=book, source_path__in=paths).delete()
        Fingerprint.objects.filter(book=book, start_chapter__in=old_numbers | new_numbers).delete()
    count, words = _chapters_create(book=book, chapters=chapters, baseline=baseline)
    return count, words, sorted(old_numbers - new_numbers)


def _chapters_create(
    *, book: Book, chapters: Sequence[ParsedChapter], baseline: tuple[int, int] | None
) -> tuple[int, int]:
    """Insert chapters and their fingerprints (one row per chapter, start = end = number, flagged
    when inside ``baseline``, default the book's style_baseline)."""
    if baseline is None and book.style_baseline_start is not None and book.style_baseline_end is not None:
        baseline = (book.style_baseline_start, book.style_baseline_end)
    low, high = baseline or (1, 0)
    rows_insert(
        Chapter,
        [
            {
                "book_id": book.pk,
                "number": c.number,
                "volume": c.volume,
                "title": c.title[:300],
                "perspective": c.perspective[:100],
                "story_time": c.story_time[:200],
                "chapter_position": c.chapter_position,
                "hook_type": c.hook_type[:50],
                "mood_position": c.mood_position,
                "summary": c.summary,
                "key_chapter": c.key_chapter,
                "opens": c.opens,
                "advances": c.advances,
                "closes": c.closes,
                "front_matter": c.front_matter,
                "body": c.body,
                "entity_tags": c.entity_tags,
                "word_count": c.word_count,
                "source_path": c.path,
                "content_hash": c.sha256,
            }
            for c in chapters
        ],
    )
    rows_insert(
        Fingerprint,
        [
            {
                "book_id": book.pk,
                "start_chapter": c.number,
                "end_chapter": c.number,
                "features": fingerprint_compute(c.body),
                "is_baseline": low <= c.number <= high,
            }
            for c in chapters
        ],
    )
    return len(chapters), sum(c.word_count for c in chapters)


def volumes_replace(*, book: Book, volumes: Sequence[ParsedVolume]) -> int:
    """Replace every volume row of the book."""
    Volume.objects.filter(book=book).delete()
    Volume.objects.bulk_create(
        [
            Volume(
                book=book, number=v.number, name=v.name[:200], start_chapter=v.start_chapter, end_chapter=v.end_chapter
            )
            for v in volumes
        ]
    )
    return len(volumes)


def volumes_add(*, book: Book, volumes: Sequence[ParsedVolume]) -> int:
    """Add volume rows that are missing (a finalized chapter names a volume the book has no row for);
    only the number and name are known."""
    Volume.objects.bulk_create([Volume(book=book, number=v.number, name=v.name[:200]) for v in volumes])
    return len(volumes)


def documents_replace(
    *, book: Book, documents: Sequence[ParsedDocument], paths: list[str] | None = None
) -> tuple[int, int]:
    """Replace the documents (and their sections) read from ``paths`` (all of the book's when None).
    Returns (documents, sections) written."""
    if paths is None:
        Document.objects.filter(book=book).only("pk").delete()
    else:
        Document.objects.filter(book=book, source_path__in=paths).delete()
    rows = Document.objects.bulk_create(
        [
            Document(
                book=book,
                kind=d.kind,
                key=d.key[:200],
                title=d.title[:300],
                front_matter=d.front_matter,
                body=d.body,
                source_path=d.path,
            )
            for d in documents
        ],
        batch_size=BATCH,
    )
    if all(r.pk is not None for r in rows):
        pks = {(r.kind, r.key): r.pk for r in rows}
    else:  # primary keys come back from PostgreSQL and SQLite ≥ 3.35 only
        pks = {
            (k, key): pk
            for k, key, pk in Document.objects.filter(book=book).order_by().values_list("kind", "key", "pk")
        }
    sections = [
        {
            "document_id": pks[(d.kind, d.key[:200])],
            "order": s.order,
            "heading": s.heading[:300],
            "level": s.level,
            "body": s.body,
        }
        for d in documents
        for s in d.sections
    ]
    return len(documents), rows_insert(Section, sections)


def timeline_replace(*, book: Book, rows: Sequence[ParsedTimelineRow], paths: list[str] | None = None) -> int:
    """Replace the timeline rows read from ``paths`` (all of the book's when None)."""
    if paths is None:
        TimelineRow.objects.filter(book=book).only("pk").delete()
    else:
        TimelineRow.objects.filter(book=book, source_path__in=paths).delete()
    return rows_insert(
        TimelineRow,
        [
            {
                "book_id": book.pk,
                "volume": r.volume,
                "order": r.order,
                "chapter": r.chapter,
                "story_time": r.story_time[:200],
                "event": r.event,
                "present": r.present,
                "source_path": r.path,
            }
            for r in rows
        ],
    )


def source_files_replace(*, book: Book, files: Sequence[ParsedSourceFile], paths: Iterable[str] | None = None) -> int:
    """Replace the SourceFile rows of ``paths`` (all of the book's when None) by ``files``."""
    if paths is None:
        SourceFile.objects.filter(book=book).only("pk").delete()
    else:
        SourceFile.objects.filter(book=book, path__in=list(paths)).delete()
    return rows_insert(
        SourceFile,
        [
            {
                "book_id": book.pk,
                "path": f.path,
                "kind": f.kind,
                "content_hash": f.sha256,
                "size": f.size,
                "mtime_ns": f.mtime_ns,
            }
            for f in files
        ],
    )


@transaction.atomic
def source_files_touch(*, book: Book, touched: dict[str, int]) -> None:
    """Record the new mtime of files whose content did not change, so the next finalize trusts it."""
    if not touched:
        return
    files = list(SourceFile.objects.filter(book=book, path__in=list(touched)).only("pk", "path"))
    for source in files:
        source.mtime_ns = touched[source.path]
    SourceFile.objects.bulk_update(files, ["mtime_ns"], batch_size=BATCH)
