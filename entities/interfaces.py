"""Read interfaces of the entities app (``story <name> <book> …`` and the REST paths in ``rest``)."""

from core.models import Book
from core.selectors import timeline_markdown
from entities import selectors
from kernel.interfaces import NUMBER, Arg, Rendering, interface

G = "实体"


def extraction_schema(*, book: Book) -> dict:
    """The JSON Schema of the extraction payload, every field documented, so an agent produces a valid one
    the first time; the same schema is the MCP ingest tool's input and docs/extraction.schema.json."""
    # Imported here: the payload's pydantic models cost ~60 ms to load, and every `story` process imports
    # this module (the registry) while only this read needs them.
    from entities.extraction_schema import extraction_json_schema  # noqa: PLC0415

    return extraction_json_schema()


REF = Arg("ref", str, required=True, positional=True, help="实体 id 或别名")
AS_OF = Arg("as_of", int, minimum=0, help="截至第几章（默认：当前）")
DEPTH = Arg("depth", int, default=1, minimum=1, maximum=5, help="层数 1–5")
TYPE = Arg("type", str, help="实体类型", choices=("角色", "地点", "物品", "势力", "招式"))

interface(
    "entity",
    help="实体详情：按 id，找不到再按别名；含别名与（截至某章的）状态",
    args=(REF, TYPE, AS_OF),
    group=G,
    path="/entities/{ref}",
    response="entities.schemas:EntityDetailOut",
    summary="实体详情",
)(selectors.entity_detail)
interface(
    "entity-list",
    help="实体列表（可按类型、层级筛选）",
    args=(
        TYPE,
        Arg("tier", str, choices=("核心", "重要", "次要", "装饰"), help="只看这个层级"),
        Arg("include_archived", bool, default=False, help="也列出已归档的实体"),
        Arg(
            "limit",
            int,
            minimum=1,
            maximum=selectors.ENTITY_PAGE_MAX,
            help=f"每页条数 1–{selectors.ENTITY_PAGE_MAX}（默认：全部）",
        ),
        Arg("offset", int, default=0, minimum=0, maximum=selectors.ENTITY_OFFSET_MAX, help="跳过前几条"),
    ),
    group=G,
    path="/entities",
    response="list[entities.schemas:EntityOut]",
    summary="实体列表",
)(selectors.entity_list)
interface(
    "entity-core",
    help="核心实体（主角在前）",
    group=G,
    path="/entities/core",
    response="list[entities.schemas:EntityOut]",
    summary="核心实体",
)(selectors.entity_list_core)
interface(
    "entity-by-alias",
    help="一个别名指向的所有实体（歧义时列出候选，不报错）",
    args=(Arg("alias", str, required=True, positional=True, help="别名"), TYPE, Arg("chapter", int, help="在第几章")),
    group=G,
    path="/entities/by-alias",
    response="entities.schemas:ByAliasOut",
    summary="按别名查实体",
)(selectors.entities_by_alias)
interface(
    "entity-changes",
    help="实体的状态变更（按章节顺序）",
    args=(
        REF,
        Arg("field", str, help="只看这个字段"),
        Arg("from_chapter", int, help="从这一章起（含）"),
        Arg("to_chapter", int, help="到这一章止（含）"),
    ),
    group=G,
    path="/entities/{ref}/changes",
    response="entities.schemas:ChangesOut",
    summary="实体的状态变更",
)(selectors.entity_changes_list)
interface(
    "entity-relationships",
    help="实体的关系（双向，截至某章），含每条关系的事件历史",
    args=(REF, AS_OF),
    group=G,
    path="/entities/{ref}/relationships",
    response="entities.schemas:RelationshipsOut",
    summary="实体的关系",
)(selectors.entity_relationships)
interface(
    "entity-graph",
    help="以实体为中心的关系图（JSON 节点/边 + Mermaid 文本）",
    args=(REF, DEPTH, AS_OF),
    group=G,
    path="/entities/{ref}/graph",
    response="entities.schemas:GraphOut",
    summary="关系图",
)(selectors.relationship_graph)
interface(
    "entity-graph-mermaid",
    help="关系图的 Mermaid 文本",
    args=(REF, DEPTH, AS_OF),
    text=True,
    group=G,
    path="/entities/{ref}/graph/mermaid",
    summary="关系图（Mermaid）",
)(selectors.relationship_graph_mermaid)
interface(
    "entity-appearances",
    help="实体出场的章节（扫描与抽取），首次/最近出场",
    args=(REF,),
    group=G,
    path="/entities/{ref}/appearances",
    response="entities.schemas:AppearancesOut",
    summary="实体出场",
)(selectors.entity_appearances)
interface(
    "entity-stats",
    help="实体统计",
    group=G,
    path="/entities/stats",
    response="entities.schemas:StatsOut",
    summary="实体统计",
)(selectors.entity_stats)
interface(
    "entity-pending",
    help="待确认队列（置信度从低到高）",
    args=(
        Arg(
            "status",
            str,
            default="pending",
            choices=("pending", "confirmed", "rejected"),
            help="队列状态：pending 待确认 | confirmed 已确认 | rejected 已驳回",
        ),
    ),
    group=G,
    path="/entities/pending",
    response="list[entities.schemas:PendingOut]",
    summary="待确认队列",
)(selectors.pending_list)
interface(
    "entity-ambiguous-mentions",
    help="正文中命中多个实体的别名与泛称的弱提及（generic；只报告，不猜测）",
    args=(Arg("chapter", int, help="只看这一章"),),
    group=G,
    path="/entities/ambiguous-mentions",
    response="list[entities.schemas:AmbiguousMentionOut]",
    summary="歧义提及",
)(selectors.chapter_ambiguous_mentions)
interface(
    "entity-tag-issues",
    help="定稿时被跳过的手工实体标签及原因",
    args=(Arg("chapter", int, help="只看这一章"),),
    group=G,
    path="/entities/tag-issues",
    response="list[entities.schemas:TagIssuesOut]",
    summary="被跳过的手工标签",
)(selectors.tag_issues_list)
interface(
    "extraction",
    help="某章最近一次抽取的结果：计数、警告、场景、chapter_meta",
    args=(NUMBER,),
    group=G,
    path="/chapters/{number}/extraction",
    response="entities.schemas:ExtractionOut",
    summary="一章的抽取结果",
)(selectors.extraction_get)

# ── characters: the P0 reads of 设定 (card or roster entry, state replayed) ──
NAME = Arg("name", str, required=True, positional=True, help="角色正名、别名或实体 id")

interface(
    "character",
    help="角色：卡片或名册的静态信息 + 截至某章（默认当前）重放后的状态（境界、位置、状态、持有物……）",
    args=(NAME, AS_OF),
    group="设定",
    path="/characters/{name}",
    response="entities.schemas:CharacterMetaOut",
    summary="角色：静态信息 + 当前状态",
)(selectors.character_meta)
interface(
    "character-card",
    help="整张角色卡（front matter 为初始设定 + 正文）",
    args=(NAME,),
    text=True,
    group="设定",
    path="/characters/{name}/card",
    summary="整张角色卡",
)(selectors.character_card)
interface(
    "character-section",
    help="角色卡的一个 ## 小节",
    args=(NAME, Arg("heading", str, required=True, positional=True, help="## 小节标题")),
    text=True,
    group="设定",
    path="/characters/{name}/section",
    summary="角色卡小节",
)(selectors.character_section)
interface(
    "alias-resolve",
    help="把别名解析为正名（多个实体 → 409 列出候选）",
    args=(
        Arg("alias", str, required=True, positional=True, help="别名或正名"),
        TYPE,
        Arg("chapter", int, help="按此章的别名有效期解析"),
    ),
    group="设定",
    path="/aliases/resolve",
    response="entities.schemas:AliasResolveOut",
    summary="别名解析",
)(selectors.alias_lookup)
interface(
    "character-list",
    help="列出角色及其当前状态与位置，可按当前状态（存活、死亡……）过滤",
    args=(Arg("status", str, help="状态"),),
    group="设定",
    path="/characters",
    response="list[entities.schemas:CharacterRowOut]",
    summary="列出角色",
)(selectors.character_list)
interface(
    "timeline-character",
    help="某角色在场的时间线条目（按正名或任一别名匹配）",
    args=(NAME, Arg("volume", int, help="只看这一卷")),
    group="时间线",
    path="/timeline/character",
    formats={"text": Rendering(timeline_markdown, media="text/markdown")},
    response="entities.schemas:CharacterTimelineOut",
    summary="角色在场的时间线",
)(selectors.timeline_character)
interface(
    "extraction-schema",
    help="抽取结果的 JSON Schema（每个字段都有说明）：照它写抽取结果，一次通过校验",
    group=G,
    path="/extraction-schema",
    response="dict",
    summary="抽取结果的 JSON Schema",
)(extraction_schema)

# ── issue 31: place and faction hierarchies (entities/hierarchy.py) ──────────────────────────────
# By dotted path: imported by the read that runs them, not by every `story` process (~0.5 ms, issue 29).
interface(
    "entity-ancestors",
    help="地点 / 势力的上级链（由近及远）及自顶而下的全链（如 雾海 > 白鹭洲）",
    args=(REF, TYPE),
    group=G,
    path="/entities/{ref}/ancestors",
    response="entities.schemas:AncestorsOut",
    summary="实体的上级链",
)("entities.hierarchy.entity_ancestors")
interface(
    "entity-descendants",
    help="地点 / 势力之内的一切（逐层：下级，下级的下级…），各带层数与直接上级",
    args=(REF, TYPE),
    group=G,
    path="/entities/{ref}/descendants",
    response="entities.schemas:DescendantsOut",
    summary="实体的下级",
)("entities.hierarchy.entity_descendants")
interface(
    "entity-within",
    help="X 是否在 Y 之内（Y 是 X 的上级或更上级），及其间的链",
    args=(REF, Arg("container", str, required=True, positional=True, help="外层实体的 id 或别名"), TYPE),
    group=G,
    path="/entities/{ref}/within/{container}",
    response="entities.schemas:WithinOut",
    summary="是否在某地 / 某势力之内",
)("entities.hierarchy.entity_within")
