"""Request and response schemas of the memory API."""

from typing import Any

from ninja import Field, Schema
from pydantic import ConfigDict

from kernel.bounds import NUMBER_MAX
from memory.models import Fact


class PackItemOut(Schema):
    id: str
    layer: str
    kind: str
    title: str
    priority: int
    tokens: int
    included: bool
    reason: str


class PackOut(Schema):
    book: str
    chapter: int
    task: str
    as_of: int
    budget_tokens: int
    used_tokens: int
    mode: str
    retrieval: str
    layers: dict[str, int]
    counts: dict[str, int]
    items: list[PackItemOut]
    text: str


class FactOut(Schema):
    id: str
    category: str
    subject: str
    field: str
    value: str
    status: str
    source_chapter: int
    evidence: list[Any]
    confidence: float
    updated_at: str | None
    origin: str
    entity: str | None
    superseded_by: str | None
    revises: str | None
    closed_chapter: int | None


class _StrictIn(Schema):
    # JSON has no lax types: a true or "3" where a number belongs is refused, not read as 1 / 3.
    model_config = ConfigDict(strict=True)


class FactIn(_StrictIn):
    """A fact observed by hand or by an external agent."""

    # The service checks category and blanks (with Chinese messages); the schema states them.
    category: str = Field(..., description="事实的类别", json_schema_extra={"enum": list(Fact.Category.values)})
    subject: str = Field(..., description="事实的主体（人物、地点、设定名）", json_schema_extra={"pattern": r"\S"})
    field: str = Field(..., description="主体的哪个字段（如 境界、所在地）", json_schema_extra={"pattern": r"\S"})
    value: str = Field(..., description="该字段的值", json_schema_extra={"pattern": r"\S"})
    chapter: int = Field(..., ge=0, le=NUMBER_MAX, description="确立该值的章节号（0 = 设定）")
    confidence: float = Field(
        1.0, allow_inf_nan=False, description="置信度（0–1）", json_schema_extra={"minimum": 0, "maximum": 1}
    )
    evidence: list[dict[str, Any]] = Field(default_factory=list, description="证据（如章节号与原文片段）")
    entity: str = Field("", description="关联的实体（id 或别名；空 = 不关联）")


class ReviseIn(_StrictIn):
    value: str
    chapter: int = Field(..., ge=0, le=NUMBER_MAX)
    reason: str = ""


class CloseIn(_StrictIn):
    chapter: int = Field(..., ge=0, le=NUMBER_MAX)
    reason: str = ""


class DecideIn(_StrictIn):
    note: str = ""
