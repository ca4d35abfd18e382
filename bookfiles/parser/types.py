"""Plain dataclasses for a parsed book folder: no Django, no database."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ERROR = "error"
WARNING = "warning"

# Issue codes that abort a rebuild; every other code is a warning (docs/book-format.md, "Validation").
ERROR_CODES = frozenset(
    {
        "yaml_error",
        "duplicate",
        "unreadable",
        "slug_changed",
        "out_of_range",
        "outside_book",
        "not_a_book",
        "would_delete",
    }
)


@dataclass(frozen=True)
class ReadLimits:
    """What the reader may read. The parser reads no settings: the rebuilder passes these in from
    ``WEBNOVEL_FILE_MAX_BYTES`` and ``WEBNOVEL_BOOK_LINKS_OUTSIDE`` (bookfiles/conf.py); the defaults
    are those settings' defaults."""

    # A chapter is ~10 KB and a whole 10-million-character outline ~30 MB; anything bigger is a mistake.
    max_bytes: int = 64 * 1024 * 1024
    # Symlinks that leave the book folder are refused unless this is set: a book's files would then be
    # whatever the link points at (/etc, /proc/1/cwd), read by the rebuilder and served to any read key.
    links_outside: bool = False


DEFAULT_LIMITS = ReadLimits()


@dataclass
class Issue:
    code: str
    file: str
    line: int | None
    message: str
    level: str = WARNING

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "file": self.file, "line": self.line, "message": self.message, "level": self.level}


@dataclass
class SourceInfo:
    path: str  # relative to the book root, "/"-separated
    kind: str
    sha256: str
    size: int
    mtime_ns: int | None = None  # lets finalize skip re-hashing unchanged settings files


@dataclass
class VolumeData:
    number: int
    name: str = ""
    start_chapter: int | None = None
    end_chapter: int | None = None


@dataclass
class BookConfig:
    slug: str
    title: str = ""
    genre: str = ""
    volumes: list[VolumeData] = field(default_factory=list)
    style_baseline: tuple[int, int] | None = None
    thresholds: dict[str, int] = field(default_factory=dict)  # only what book.yaml sets
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChapterData:
    number: int
    path: str
    sha256: str
    folder_volume: int | None = None
    folder_volume_name: str = ""
    volume: int | None = None  # resolved: front matter > volume folder > book.yaml range
    title: str = ""
    perspective: str = ""
    story_time: str = ""
    chapter_position: str = ""
    hook_type: str = ""
    mood_position: str = ""
    summary: str = ""
    key_chapter: bool = False
    opens: list[str] = field(default_factory=list)
    advances: list[str] = field(default_factory=list)
    closes: list[str] = field(default_factory=list)
    front_matter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    word_count: int = 0
    entity_tags: list[dict[str, Any]] = field(default_factory=list)
    fm_text: str = ""  # raw front matter, kept only to find line numbers for issues


@dataclass
class HistoryData:
    order: int
    chapter: int | None
    text: str
    line: int


@dataclass
class ThreadData:
    thread_id: str
    type: str
    path: str
    title: str = ""
    strength: str = "中"
    status: str = "进行"
    opened: int | None = None
    planned_end: int | None = None
    planned_end_volume: int | None = None  # planned_end: 第N卷 (its last chapter is resolved at query time)
    closed: int | None = None
    description: str = ""
    closing_plan: str = ""
    history: list[HistoryData] = field(default_factory=list)
    front_matter: dict[str, Any] = field(default_factory=dict)


@dataclass
class SecretData:
    secret_id: str
    path: str
    title: str = ""
    known_to: list[dict[str, Any]] = field(default_factory=list)
    reader_knows: bool = False
    reader_told: int | None = None
    registered: int | None = None
    keywords: list[str] = field(default_factory=list)
    content: str = ""
    front_matter: dict[str, Any] = field(default_factory=dict)


@dataclass
class AliasData:
    alias: str
    valid_from: int | None = None
    valid_to: int | None = None
    note: str = ""
    generic: bool = False  # a pronoun / kinship / role word: weak mentions only


@dataclass
class StateChangeData:
    """A state change an entity's entry declares (a card's or roster entry's ``changes:``): from the end
    of ``chapter`` on, ``op`` (set / unset / add / remove / inc) of ``field`` with ``value``."""

    chapter: int
    op: str
    field: str
    value: Any = None
    note: str = ""
    entity: str = ""  # a timeline row's change: the entity's name, alias or id (a card's is its own)
    line: int | None = None  # a timeline row's change: its line in the file


@dataclass
class EntityData:
    type: str
    name: str
    path: str
    line: int | None = None
    explicit_id: str = ""
    tier: str = "装饰"  # the seed's default: an entry says when it matters more
    description: str = ""
    base_state: dict[str, Any] = field(default_factory=dict)
    protagonist: bool = False
    aliases: list[AliasData] = field(default_factory=list)
    parent: str = ""  # issue 31: the place / faction this one lies within (a name, alias or id; entities/hierarchy.py)
    changes: list[StateChangeData] = field(default_factory=list)  # issue 27: declared state changes


@dataclass
class SectionData:
    order: int
    heading: str
    body: str
    level: int = 2


@dataclass
class DocumentData:
    kind: str
    key: str
    path: str
    title: str = ""
    front_matter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    sections: list[SectionData] = field(default_factory=list)


@dataclass
class TimelineRowData:
    volume: int
    order: int
    path: str
    chapter: int | None = None
    story_time: str = ""
    event: str = ""
    present: list[str] = field(default_factory=list)
    changes: list[StateChangeData] = field(default_factory=list)  # issue 27: its 状态变化 cell


@dataclass
class FileResult:
    """What one file contributed. Partial updates (finalize / sync) work file by file."""

    info: SourceInfo
    issues: list[Issue] = field(default_factory=list)
    config: BookConfig | None = None
    chapter: ChapterData | None = None
    thread: ThreadData | None = None
    secret: SecretData | None = None
    entities: list[EntityData] = field(default_factory=list)
    documents: list[DocumentData] = field(default_factory=list)
    timeline: list[TimelineRowData] = field(default_factory=list)


@dataclass
class ParsedBook:
    root: Path
    config: BookConfig
    chapters: list[ChapterData] = field(default_factory=list)
    threads: list[ThreadData] = field(default_factory=list)
    secrets: list[SecretData] = field(default_factory=list)
    entities: list[EntityData] = field(default_factory=list)
    documents: list[DocumentData] = field(default_factory=list)
    timeline: list[TimelineRowData] = field(default_factory=list)
    files: list[SourceInfo] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.level == ERROR]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.level != ERROR]
