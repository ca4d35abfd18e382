"""Response schemas of the core endpoints. Field lists mirror the dicts the selectors return
(tests/core/test_interfaces_parity.py checks that REST and CLI answers are identical)."""

from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import WithJsonSchema

_JSON_TYPES = {int: "integer", str: "string"}


def documented(kind: type, *, nullable: bool = False, **limits: Any) -> Any:
    """The annotation of a parameter whose OpenAPI schema states the limits (``minimum``,
    ``maximum``, ``minLength``, ``enum``…) that its selector or service enforces.

    Only the schema changes: pydantic does not check them, the selector still does, so a bad value
    keeps its precise Chinese message ("参数 chars 必须在 1 到 20000 之间（收到 0）"). Clients (and
    schemathesis) learn what is accepted without the two ever disagreeing on the wording.

    ``nullable``: the parameter is optional, and a blank value (``?status=``) is read as absent by
    the selectors (``if status:``), so a choice list also admits ``""``."""
    if nullable and "enum" in limits:
        limits = {**limits, "enum": [*limits["enum"], ""]}
    schema = {"type": _JSON_TYPES[kind], **limits}
    if nullable:
        return Annotated[kind | None, WithJsonSchema({"anyOf": [schema, {"type": "null"}]})]
    return Annotated[kind, WithJsonSchema(schema)]


class BookOut(Schema):
    slug: str
    title: str
    genre: str
    chapters: int
    current_chapter: int | None


class ChapterThreadsOut(Schema):
    opens: list[str]
    advances: list[str]
    closes: list[str]


class ChapterMetaOut(Schema):
    """A chapter's front matter; ``extra`` holds keys the format does not define, as written."""

    number: int
    title: str
    volume: int | None
    perspective: str
    story_time: str
    chapter_position: str
    hook_type: str
    mood_position: str
    summary: str
    key_chapter: bool
    threads: ChapterThreadsOut
    word_count: int
    extra: dict[str, Any]


class ChapterSummaryOut(Schema):
    number: int
    title: str
    summary: str


class ChapterTailOut(Schema):
    number: int
    title: str
    tail: str


class ChapterRowOut(Schema):
    number: int
    title: str
    volume: int | None
    chapter_position: str


class VolumeOut(Schema):
    number: int
    name: str
    start_chapter: int | None
    end_chapter: int | None
    chapters: int


class TimelineRowOut(Schema):
    chapter: int | None
    story_time: str
    event: str
    present: list[str]


class TimelineOut(Schema):
    volume: int
    rows: list[TimelineRowOut]


class LineHitOut(Schema):
    chapter: int
    line: int
    context: str


class BookSearchHitOut(Schema):
    chapter: int
    line: int = Field(description="行号（正文 1 起；0 = 章节摘要）")
    context: str
    signals: list[str] = Field(description="找到它的信号：keyword | bm25 | semantic")


class BookSearchOut(Schema):
    query: str
    mode: str = Field(description="实际使用的方式：keyword | semantic | hybrid")
    note: str = Field(description="说明：所用方式，或回退到关键词的原因")
    total: int
    hits: list[BookSearchHitOut]


class RegexSearchOut(Schema):
    pattern: str
    total: int
    hits: list[LineHitOut]


class WeakHooksOut(Schema):
    current_chapter: int | None
    threshold: int
    streak: int
    chapters: list[int]
    reported: bool


class StyleRangeOut(Schema):
    start: int
    end: int
    chapters: int


class StyleFeatureOut(Schema):
    feature: str
    baseline: float
    current: float
    change: float | None
    drifted: bool


class StylePhraseOut(Schema):
    phrase: str
    count: int
    per_10k: float


class StyleCommonPhrasesOut(Schema):
    baseline: list[StylePhraseOut]
    current: list[StylePhraseOut]
    new: list[str]


class StyleDriftOut(Schema):
    baseline: StyleRangeOut
    current: StyleRangeOut
    features: list[StyleFeatureOut]
    common_phrases: StyleCommonPhrasesOut


class ThreadCountsOut(Schema):
    total: int
    进行: int
    已收尾: int
    已放弃: int


class SecretCountsOut(Schema):
    total: int
    reader_unknown: int


class BookStatsOut(Schema):
    title: str
    current_chapter: int | None
    chapters: int
    volumes: int
    characters_of_text: int
    average_chapter_length: int
    threads: ThreadCountsOut
    secrets: SecretCountsOut
    characters: int
    entities: dict[str, int]
    timeline_rows: int
