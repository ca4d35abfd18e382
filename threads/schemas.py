"""Response schemas of the threads endpoints (fields mirror the selectors' dicts)."""

from ninja import Schema
from pydantic import Field


class ThreadRowOut(Schema):
    id: str
    type: str
    title: str
    strength: str
    status: str
    opened_chapter: int | None
    planned_end: int | None = Field(description="计划收尾章（写作章号时）")
    planned_end_volume: int | None = Field(description="计划收尾卷（写作「第N卷」时）")
    planned_end_written: str | None = Field(
        description="作者写的 planned_end 原样：「第40章」或「第7卷」（没有则 null）"
    )
    closed_chapter: int | None


class ThreadBasicsOut(ThreadRowOut):
    """A thread's basics plus its hang computed at query time (null unless status is 进行)."""

    planned_end_chapter: int | None = Field(description="计划收尾的章：planned_end，或计划卷在 book.yaml 里的最后一章")
    planned_end_note: str = Field(description="计划卷尚未写到（book.yaml 没有它的章节范围）时的说明")
    last_activity_chapter: int | None
    current_chapter: int | None
    hang: int | None = Field(description="当前最大章号 − 最后推进章")
    threshold: int
    past_planned_end: bool
    overdue: bool = Field(description="hang > threshold，或已过计划收尾章")
    overdue_reason: str


class HistoryEntryOut(Schema):
    chapter: int | None
    text: str


class ThreadHistoryOut(Schema):
    id: str
    title: str
    entries: list[HistoryEntryOut]


class OverdueThreadOut(Schema):
    id: str
    type: str
    title: str
    strength: str
    last_activity_chapter: int | None
    hang: int
    threshold: int
    planned_end_chapter: int | None
    past_planned_end: bool
    overdue_reason: str
    over_by: int = Field(description="hang − threshold（仅因超过计划收尾章而超期时可为负）")


class OverdueOut(Schema):
    current_chapter: int | None
    threads: list[OverdueThreadOut]


class KnownToOut(Schema):
    name: str
    since: int | None


class SecretBasicsOut(Schema):
    id: str
    title: str
    known_to: list[KnownToOut]
    reader_knows: bool
    reader_told_chapter: int | None
    registered_chapter: int | None
    keywords: list[str]


class SecretAccumulationOut(Schema):
    id: str
    title: str
    registered_chapter: int | None
    accumulated: int | None
    over_limit: bool


class SecretUnknownOut(Schema):
    current_chapter: int | None
    threshold: int
    secrets: list[SecretAccumulationOut]


class OverdueTypeOut(Schema):
    type: str
    threshold: int
    count: int
    threads: list[OverdueThreadOut]


class OverdueReportOut(Schema):
    current_chapter: int | None
    total: int
    types: list[OverdueTypeOut]


class SecretReportOut(Schema):
    current_chapter: int | None
    threshold: int
    unknown: int
    over_limit: list[str]
    secrets: list[SecretAccumulationOut]


class ActivityOut(Schema):
    id: str
    title: str
    chapters: list[int]


class ThreadActivityOut(Schema):
    volume: int
    start_chapter: int | None
    end_chapter: int | None
    opened: list[ActivityOut]
    advanced: list[ActivityOut]
    closed: list[ActivityOut]


class LeakOut(Schema):
    """One secret leaking in one chapter: which keywords, on which lines, and why."""

    secret: str
    chapter: int
    perspective: str | None
    reasons: list[str]
    keywords: list[str]
    lines: list[int]
    context: str


class LeakScanOut(Schema):
    secrets_scanned: int
    total: int
    leaks: list[LeakOut]
