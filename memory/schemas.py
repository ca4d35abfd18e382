"""Request and response schemas of the memory API."""

from typing import Any

from ninja import Field, Schema


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


class FactIn(Schema):
    """A fact observed by hand or by an external agent."""

    category: str
    subject: str
    field: str
    value: str
    chapter: int = Field(..., ge=0, description="确立该值的章节号（0 = 设定）")
    confidence: float = 1.0
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    entity: str = ""


class ReviseIn(Schema):
    value: str
    chapter: int = Field(..., ge=0)
    reason: str = ""


class CloseIn(Schema):
    chapter: int = Field(..., ge=0)
    reason: str = ""


class DecideIn(Schema):
    note: str = ""
