"""Schemas of the entities app: the Data Agent's extraction JSON (validated by the ingestion service
for both front doors) and the request/response bodies of the REST endpoints."""

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field

from core.schemas import TimelineRowOut
from entities.ids import entity_id_check
from kernel.bounds import NUMBER_MAX

EntityType = Literal["角色", "地点", "物品", "势力", "招式"]
Tier = Literal["核心", "重要", "次要", "装饰"]
Confidence = Annotated[float | None, Field(allow_inf_nan=False)]
CHAPTER_MAX = NUMBER_MAX  # chapter and line numbers past this are a typo or an attack, never a book
ChapterNumber = Annotated[int, Field(ge=1, le=CHAPTER_MAX)]
EntityIdIn = Annotated[str, AfterValidator(lambda v: entity_id_check(v))]


class _In(Schema):
    # Unknown keys are refused (a 422 naming the path and listing the allowed keys): a mistyped key
    # (`state_change`) silently adopting nothing would replace the chapter's previous extraction.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AppearedIn(_In):
    id: str = Field(min_length=1)
    type: EntityType | None = None
    mentions: list[str] | int | None = None
    confidence: Confidence = Field(default=None, ge=0, le=1)


class AliasIn(_In):
    alias: str = Field(min_length=1)
    valid_from: ChapterNumber | None = Field(default=None, alias="from")
    valid_to: ChapterNumber | None = Field(default=None, alias="to")
    note: str = ""
    generic: bool = False  # 泛称（老爷、他）：弱提及，不计出场


class NewEntityIn(_In):
    suggested_id: EntityIdIn | None = None
    name: str = Field(min_length=1)
    type: EntityType
    tier: Tier = "装饰"
    desc: str = ""
    aliases: list[str | AliasIn] = []
    state: dict[str, Any] = {}
    parent: str | None = None  # issue 31: the place / faction it lies within (entities/hierarchy.py)
    confidence: Confidence = Field(default=None, ge=0, le=1)


class StateChangeIn(_In):
    entity_id: str = Field(min_length=1)
    field: str = Field(min_length=1, max_length=100)
    op: Literal["set", "unset", "add", "remove", "inc"] = "set"
    old: Any = None
    new: Any = None
    reason: str = ""
    confidence: Confidence = Field(default=None, ge=0, le=1)


class RelationshipIn(_In):
    from_: str = Field(min_length=1, alias="from")
    to: str = Field(min_length=1)
    type: str = Field(min_length=1, max_length=100)
    description: str = ""
    confidence: Confidence = Field(default=None, ge=0, le=1)


class UncertainIn(_In):
    mention: str = Field(min_length=1)
    candidates: list[str] = []
    confidence: Confidence = Field(default=None, ge=0, le=1)
    adopted: str | None = None


class SceneIn(_In):
    index: int = Field(ge=0, le=CHAPTER_MAX)
    start_line: ChapterNumber | None = None
    end_line: ChapterNumber | None = None
    location: str = ""
    summary: str = ""
    characters: list[str] = []


class ExtractionIn(_In):
    """The Data Agent's report on one finished chapter."""

    entities_appeared: list[AppearedIn] = []
    entities_new: list[NewEntityIn] = []
    state_changes: list[StateChangeIn] = []
    relationships_new: list[RelationshipIn] = []
    uncertain: list[UncertainIn] = []
    scenes: list[SceneIn] = []
    chapter_meta: dict[str, Any] = {}


class IngestOut(Schema):
    book: str
    chapter: int
    adopted: dict[str, int]
    pending: int
    warnings: list[dict[str, Any]]
    created_entities: list[str]
    replaced: bool
    hook_failures: list[dict[str, Any]] = Field(
        default_factory=list, description="提交后失败的后续更新（如记忆派生）：抽取已保存，记忆未跟上"
    )


class PendingConfirmIn(Schema):
    entity: str | None = Field(default=None, description="选择已有实体（id 或别名）；留空则按建议新建")


class PendingRejectIn(Schema):
    note: str = Field("", description="驳回理由（存入待确认项，写入日志）")


class MergeIn(Schema):
    source: str = Field(description="被合并的实体（id 或别名），合并后删除，其 id 成为别名")
    target: str = Field(description="保留的实体（id 或别名）")


# --- responses ------------------------------------------------------------------------------------


class AliasOut(Schema):
    alias: str
    valid_from: int | None
    valid_to: int | None
    note: str
    source: str
    generic: bool = False


class EntityOut(Schema):
    id: str
    type: str
    canonical_name: str
    tier: str
    description: str
    is_protagonist: bool
    archived: bool
    first_appearance: int | None
    last_appearance: int | None
    source: str
    aliases: list[AliasOut]
    state: dict[str, Any]


class EntityDetailOut(EntityOut):
    as_of: int | None


class CandidateOut(Schema):
    id: str
    type: str
    canonical_name: str


class ByAliasOut(Schema):
    alias: str
    type: str | None
    chapter: int | None
    ambiguous: bool
    resolved: str | None
    candidates: list[CandidateOut]


class StateChangeOut(Schema):
    chapter: int
    seq: int
    field: str
    op: str
    old: Any
    new: Any
    reason: str
    confidence: float | None
    source: str


class ChangesOut(Schema):
    id: str
    canonical_name: str
    changes: list[StateChangeOut]


class EdgeOut(Schema):
    from_: str = Field(alias="from")
    to: str
    type: str
    description: str
    chapter: int | None
    last_chapter: int | None

    model_config = ConfigDict(populate_by_name=True)


class EventOut(Schema):
    chapter: int | None
    description: str
    source: str


class RelationshipOut(EdgeOut):
    events: list[EventOut]


class RelationshipsOut(Schema):
    id: str
    as_of: int | None
    relationships: list[RelationshipOut]


class NodeOut(Schema):
    id: str
    canonical_name: str
    type: str
    tier: str
    distance: int


class GraphOut(Schema):
    center: str
    depth: int
    as_of: int | None
    nodes: list[NodeOut]
    edges: list[EdgeOut]
    mermaid: str


class AppearanceOut(Schema):
    chapter: int
    count: int
    first_offset: int | None
    aliases: dict[str, int]
    sources: list[str]


class WeakMentionOut(Schema):
    chapter: int
    alias: str
    count: int
    candidates: list[str]


class AppearancesOut(Schema):
    id: str
    first_appearance: int | None
    last_appearance: int | None
    chapters: list[AppearanceOut]
    weak_mentions: list[WeakMentionOut]


class TopEntityOut(Schema):
    id: str
    canonical_name: str
    chapters: int
    first: int | None
    last: int | None


class StatsOut(Schema):
    entities: int
    by_type: dict[str, int]
    by_tier: dict[str, int]
    archived: int
    aliases: int
    ambiguous_aliases: list[str]
    generic_aliases: list[str]
    weak_mentions: int
    state_changes: int
    relationships: int
    appearances: int
    pending: dict[str, int]
    top_entities: list[TopEntityOut]


class PendingOut(Schema):
    pk: int
    chapter: int | None
    kind: str
    confidence: float | None
    status: str
    payload: dict[str, Any]
    note: str
    resolution: dict[str, Any]
    source: str


class AmbiguousMentionOut(Schema):
    chapter: int
    alias: str
    count: int
    first_offset: int | None
    candidates: list[str]
    generic: bool


class TagIssuesOut(Schema):
    chapter: int
    issues: list[dict[str, Any]]


class ExtractionOut(Schema):
    chapter: int
    source: str
    summary: dict[str, Any]
    warnings: list[dict[str, Any]]
    scenes: list[dict[str, Any]]
    chapter_meta: dict[str, Any]
    uncertain: list[dict[str, Any]]
    updated_at: str


class MergeOut(Schema):
    source: str
    target: str
    moved: dict[str, int]


class ResolutionOut(Schema):
    pk: int
    kind: str
    entity: str | None = None
    relationship: list[str] | None = None
    status: str | None = None
    roster: str | None = Field(default=None, description="发现的实体：写入的名册文件")
    added: bool | None = Field(default=None, description="发现的实体：名册是否新增了条目")
    note: str | None = None


# ── characters (the 设定 reads) ──


class CharacterMetaOut(Schema):
    id: str
    name: str
    aliases: list[str]
    tier: str
    protagonist: bool
    description: str
    source: str = Field(description="角色卡 | 名册 | 正文标签 | 抽取 | 迁移 | 后台")
    source_path: str
    as_of: int | None = Field(description="状态截至的章节（默认当前章；书中尚无定稿章时为 null：初始设定）")
    current_chapter: int | None
    state: dict[str, Any] = Field(description="初始设定重放至 as_of 的全部状态变更")
    changed_in: dict[str, int] = Field(description="每个变更过的状态键最后一次变更所在章")
    sections: list[str] = Field(description="角色卡的 ## 小节（无角色卡为空）")


class CharacterRowOut(Schema):
    id: str
    name: str
    tier: str
    status: Any
    location: Any
    protagonist: bool


class AliasResolveOut(Schema):
    alias: str
    id: str
    type: str
    canonical_name: str


class CharacterTimelineRowOut(TimelineRowOut):
    volume: int


class CharacterTimelineOut(Schema):
    character: str
    names: list[str]
    rows: list[CharacterTimelineRowOut]


# ── issue 31: place and faction hierarchies (entities/hierarchy.py) ──────────────────────────────


class NodeOut(Schema):
    id: str
    name: str
    type: str


class DescendantOut(NodeOut):
    depth: int
    parent: str


class AncestorsOut(Schema):
    entity: NodeOut
    ancestors: list[NodeOut]
    chain: str


class DescendantsOut(Schema):
    entity: NodeOut
    descendants: list[DescendantOut]


class WithinOut(Schema):
    entity: NodeOut
    container: NodeOut
    within: bool
    path: str
