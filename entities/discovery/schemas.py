"""Schemas of the discovery endpoint."""

from ninja import Field, Schema

from entities.discovery.engine import TYPES


class DiscoverIn(Schema):
    min_count: int = Field(default=5, ge=1, le=100000, description="一个名字至少出现的次数")
    types: list[str] = Field(default=list(TYPES), description="要发现的类型：角色 / 地点 / 势力")
    limit: int = Field(default=200, ge=1, le=1000, description="每种类型最多提议多少个")


class DiscoveredAliasOut(Schema):
    alias: str
    count: int
    generic: bool = Field(description="泛称（老爷、师父、大王…）：计为弱提及，不作普通别名")
    why: str = Field(description="为何归入这一组")


class DiscoveredEvidenceOut(Schema):
    count: int
    first_chapter: int
    chapters: int
    signals: dict[str, int]
    samples: list[str]


class DiscoveredOut(Schema):
    pk: int = Field(description="待确认项 id（确认 / 拒绝用 /entities/pending/{pk}/…）")
    type: str
    name: str
    aliases: list[DiscoveredAliasOut]
    confidence: float
    band: str = Field(description="高（> 0.8）/ 中（0.5–0.8）/ 低（< 0.5）")
    evidence: DiscoveredEvidenceOut


class DiscoverCountsOut(Schema):
    proposed: int
    queued: int
    known: int = Field(description="已是实体 / 别名、已提议或已拒绝，未再提出")
    below_floor: int = Field(description="置信度低于 0.3，未入队")


class DiscoverCutOut(Schema):
    chapter: int = Field(description="章号")
    chars: int = Field(description="该章字数")
    read: int = Field(description="读入的字数（单章上限，其余未读）")


class DiscoverBoundsOut(Schema):
    chars: int = Field(description="正文总字数")
    read: int = Field(description="本次读入的字数（超过上限的部分未读）")
    unlexical: int = Field(description="几乎不成词的片段数（疑似乱码：只按词典切分，不从中找新名字）")
    cut: list[DiscoverCutOut] = Field(default_factory=list, description="超过单章上限、只读了一部分的章")
    note: str | None = Field(default=None, description="未读完全文时的说明")


class DiscoverOut(Schema):
    book: str
    chapters: int
    counts: DiscoverCountsOut
    queued: list[DiscoveredOut]
    bounds: DiscoverBoundsOut
