"""Request and response schemas of the story-system endpoints (fields mirror the selectors' dicts;
deeply nested parts of a StorySystemDict stay plain JSON objects)."""

from typing import Any

from ninja import Schema
from pydantic import Field


class AntiPatternOut(Schema):
    text: str
    source_table: str
    source_code: str
    field: str


class SearchHitOut(Schema):
    rank: int
    score: float
    code: str
    table: str
    library: str
    category: str
    level: str
    skills: list[str]
    genres: list[str]
    keywords: list[str]
    intents: list[str]
    instruction: str
    summary: str
    detail: str
    fields: dict[str, str]
    anti_patterns: list[AntiPatternOut]
    matched_terms: list[str]


class SearchOut(Schema):
    query: str
    filters: dict[str, str | None]
    max_results: int
    total: int
    results: list[SearchHitOut]


class RouteOut(Schema):
    method: str
    genre: str
    canonical_genre: str
    primary: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    base_tables: list[str]
    dynamic_tables: list[str]
    default_query_terms: list[str]
    required_payoffs: list[str]
    genre_filter: list[str]
    weight: float
    ruling: dict[str, Any] | None
    reason: str | None  # why nothing was chosen (generic route only; null otherwise)


class StorySystemOut(Schema):
    """A master StorySystemDict."""

    meta: dict[str, Any]
    route: dict[str, Any]
    master_constraints: dict[str, Any]
    base_context: dict[str, list[dict[str, Any]]]  # table → its entries, in rank order
    dynamic_context: list[dict[str, Any]]
    anti_patterns: list[dict[str, Any]]
    override_policy: dict[str, list[str]]
    # kind, code, table, library, score, and for an entry (route, ruling, candidate, base, dynamic, master)
    # its 摘要 and 指令
    source_trace: list[dict[str, Any]]


class ChapterStoryOut(StorySystemOut):
    """A chapter's StorySystemDict: effective constraints with their origins and the chapter's own overrides."""

    field_origins: dict[str, str]
    chapter_overrides: dict[str, Any]


class EffectiveOut(Schema):
    book: str
    chapter: int
    has_chapter_override: bool
    chapter_query: str | None
    master_constraints: dict[str, Any]
    fields: dict[str, dict[str, Any]]
    anti_patterns: list[dict[str, Any]]
    base_context: dict[str, list[dict[str, Any]]]  # table → its entries, in rank order
    dynamic_context: list[dict[str, Any]]
    dynamic_context_origin: str
    override_policy: dict[str, list[str]]
    ignored_locked: dict[str, Any]


class BuildIn(Schema):
    """Build a master setting (no ``chapter``) or a chapter's override (``chapter`` = N)."""

    query: str = Field("", description="本书（或本章）的一句话描述，用来匹配题材与套路")
    genre: str | None = Field(default=None, description="指定题材（不给则从 query 推断）")
    chapter: int | None = Field(default=None, ge=1, description="章节号：给出则生成该章的覆盖设定，不给是全书总设定")
    persist: bool = Field(default=True, description="是否保存到书籍文件夹的 .story-system/（false 只预览）")
    set: dict[str, str | list[str]] = Field(default_factory=dict, description='显式设定字段，如 {"节奏策略": "慢热"}')
    add_anti_patterns: list[str] = Field(default_factory=list, description="追加的毒点（禁忌写法）")
    remove_anti_patterns: list[str] = Field(default_factory=list, description="章节一律拒绝：毒点只增不减")


class BuildOut(Schema):
    persisted: bool
    files: list[str]
    story_system: dict[str, Any]
