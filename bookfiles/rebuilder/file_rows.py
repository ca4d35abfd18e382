"""What the rebuild, finalize and sync share on the book-files side: the one write of a set of files'
rows (``file_rows_write``: a full rebuild is every file changed), the volumes a book gets from
book.yaml plus its chapter folders, the changed paths by kind, the roster's skipped entries as issues.

The rebuilder writes no table itself: it calls each app's own writers in its one transaction — the
core's rows through ``core.writers``, threads and secrets through ``threads.services``, the roster's
entities and aliases through ``entities.roster``.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bookfiles.parser import (
    ChapterData,
    DocumentData,
    EntityData,
    Issue,
    SecretData,
    SourceInfo,
    StateChangeData,
    ThreadData,
    TimelineRowData,
    VolumeData,
)
from core import writers as core_writers
from core.models import Book
from entities.roster import roster_write, timeline_changes_write
from threads.services import secrets_replace, threads_replace

DOCUMENT_KINDS = ("character_card", "worldview", "master_outline", "volume_outline", "style")


@dataclass
class FileRows:
    """The parsed contents of a set of files and what their rows replace: ``by_kind`` (kind → paths of
    the files read or removed) for a partial write, None for the whole book (every row replaced)."""

    chapters: list[ChapterData] = field(default_factory=list)
    threads: list[ThreadData] = field(default_factory=list)
    secrets: list[SecretData] = field(default_factory=list)
    documents: list[DocumentData] = field(default_factory=list)
    timeline: list[TimelineRowData] = field(default_factory=list)
    entities: list[EntityData] | None = None  # None: no entity file changed (their rows stay)
    # issue 27: every timeline file's declared changes (path, change); None: no timeline or entity file changed
    timeline_changes: list[tuple[str, StateChangeData]] | None = None
    files: list[SourceInfo] = field(default_factory=list)
    by_kind: dict[str, list[str]] | None = None
    removed: list[str] = field(default_factory=list)  # paths of removed files (a partial write)

    def paths(self, *kinds: str) -> list[str] | None:
        if self.by_kind is None:
            return None
        return [p for kind in kinds for p in self.by_kind.get(kind, [])]


@dataclass
class FileRowsWritten:
    words: int
    removed_numbers: list[int]  # chapter numbers no chapter has any more
    issues: list[Issue]  # the roster's skipped entries


def file_rows_write(
    *,
    book: Book,
    rows: FileRows,
    counts: dict[str, Any],
    volumes: Callable[[], int],
    baseline: tuple[int, int] | None = None,
) -> FileRowsWritten:
    """Write the rows of ``rows`` through each owning app's writer, in the one order every rebuild,
    finalize and sync uses (a new file kind gets its writer here, once). ``volumes`` writes the volume
    rows after the chapters (a rebuild merges book.yaml's; finalize / sync update them from the
    chapters); ``counts`` gets each writer's count."""
    counts["chapters"], words, removed_numbers = core_writers.chapters_replace(
        book=book, chapters=rows.chapters, paths=rows.paths("chapter"), baseline=baseline
    )
    counts["volumes"] = volumes()
    counts["threads"] = threads_replace(book=book, threads=rows.threads, paths=rows.paths("thread"))
    counts["secrets"] = secrets_replace(book=book, secrets=rows.secrets, paths=rows.paths("secret"))
    counts["documents"], counts["sections"] = core_writers.documents_replace(
        book=book, documents=rows.documents, paths=rows.paths(*DOCUMENT_KINDS)
    )
    counts["timeline_rows"] = core_writers.timeline_replace(book=book, rows=rows.timeline, paths=rows.paths("timeline"))
    issues: list[Issue] = []
    if rows.entities is not None:
        counts["entities"], counts["aliases"], issues = entities_write(book=book, entities=rows.entities)
    if rows.timeline_changes is not None:  # after the roster: the names resolve to its entities
        _written, skipped = timeline_changes_write(book=book, changes=rows.timeline_changes)
        issues += [Issue(*s) for s in skipped]
    core_writers.source_files_replace(
        book=book,
        files=rows.files,
        paths=None if rows.by_kind is None else [f.path for f in rows.files] + rows.removed,
    )
    return FileRowsWritten(words=words, removed_numbers=removed_numbers, issues=issues)


def entities_write(*, book: Book, entities: list[EntityData]) -> tuple[int, int, list[Issue]]:
    """The roster's entities and aliases (entities.roster), with its skipped entries as warnings."""
    count, aliases, skipped = roster_write(book=book, entities=entities)
    return count, aliases, [Issue(*s) for s in skipped]


def timeline_changes_of(timeline: Iterable[TimelineRowData]) -> list[tuple[str, StateChangeData]]:
    """The state changes timeline rows declare (their 状态变化 cells), with each row's file."""
    return [(row.path, change) for row in timeline for change in row.changes]


def volumes_merge(
    config_volumes: list[VolumeData], chapters: Iterable[tuple[int | None, int | None, str]]
) -> list[VolumeData]:
    """book.yaml volumes plus any volume a chapter names (front matter or folder) that book.yaml
    lacks; such a volume takes its name from the volume folder. ``chapters``: (number, volume,
    folder name) in chapter order."""
    volumes = {v.number: VolumeData(v.number, v.name, v.start_chapter, v.end_chapter) for v in config_volumes}
    extra_names: dict[int, str] = {}
    for _number, volume, folder_name in chapters:
        if volume is None or volume in volumes:
            continue
        if volume not in extra_names or (not extra_names[volume] and folder_name):
            extra_names[volume] = folder_name
    for number, name in extra_names.items():
        volumes[number] = VolumeData(number=number, name=name)
    return [volumes[n] for n in sorted(volumes)]


def group_by_kind(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for path, kind in items:
        out[kind].append(path)
    return out
