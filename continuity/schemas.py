"""Request bodies of the continuity endpoints."""

from ninja import Field, Schema
from pydantic import ConfigDict

from continuity.selectors import CHAPTER_MAX, DRAFT_MAX_CHARS


class _StrictIn(Schema):
    model_config = ConfigDict(strict=True, extra="forbid")


class DraftIn(_StrictIn):
    """A draft to check: the chapter file's text, front matter included."""

    # The selector enforces the bound with a Chinese message; the schema states it.
    text: str = Field(..., description="草稿全文（含 front matter）", json_schema_extra={"maxLength": DRAFT_MAX_CHARS})
    chapter: int | None = Field(
        None,
        json_schema_extra={"minimum": 1, "maximum": CHAPTER_MAX},
        description="章节号 N（默认：front matter 的 chapter，否则最后一章 + 1）",
    )


class WaiverIn(_StrictIn):
    """Mark the findings of one kind about one term in one chapter intended (这是有意安排)."""

    chapter: int = Field(..., json_schema_extra={"minimum": 1, "maximum": CHAPTER_MAX})
    kind: str = Field(..., description="机检类别，如 inactive_acts")
    term: str = Field(..., description="机检结果中的 term")
    note: str = Field("", description="说明")
