"""Pure parsing of a book folder (docs/book-format.md): no Django, no database.

``book_read(root)`` reads every file and returns a ``ParsedBook`` of dataclasses plus issues;
``file_read`` parses a single file, which ``chapter_finalize`` and ``book_sync`` build on.
"""

from webnovel.bookfs.reader import (
    alias_conflicts_check,
    book_files_list,
    book_read,
    book_validate,
    chapter_threads_check,
    chapter_volume_resolve,
    file_bytes_parse,
    file_bytes_read,
    file_read,
    file_sha256,
    results_collect,
)
from webnovel.bookfs.types import (
    ERROR,
    WARNING,
    AliasData,
    BookConfig,
    ChapterData,
    DocumentData,
    EntityData,
    FileResult,
    HistoryData,
    Issue,
    ParsedBook,
    SecretData,
    SectionData,
    SourceInfo,
    ThreadData,
    TimelineRowData,
    VolumeData,
)

__all__ = [
    "ERROR",
    "WARNING",
    "AliasData",
    "BookConfig",
    "ChapterData",
    "DocumentData",
    "EntityData",
    "FileResult",
    "HistoryData",
    "Issue",
    "ParsedBook",
    "SecretData",
    "SectionData",
    "SourceInfo",
    "ThreadData",
    "TimelineRowData",
    "VolumeData",
    "alias_conflicts_check",
    "book_files_list",
    "book_read",
    "book_validate",
    "chapter_threads_check",
    "chapter_volume_resolve",
    "file_bytes_parse",
    "file_bytes_read",
    "file_read",
    "file_sha256",
    "results_collect",
]
