"""REST endpoints of the entities app (mounted under /api/books/). Thin adapters over the same
selectors the ``story`` command serves (``entities/interfaces.py``) and over the services."""

from typing import Any

from django.http import HttpRequest
from ninja import Router

from entities import schemas as S
from entities import selectors, services
from entities.discovery.schemas import DiscoverIn, DiscoverOut
from entities.discovery.services import book_discover
from entities.extraction_schema import extraction_json_schema
from entities.schemas import IngestOut, MergeIn, PendingConfirmIn, PendingRejectIn
from webnovel.schemas import documented
from webnovel.selectors import book_get

router = Router(tags=["实体"])

# Limits the selectors enforce, stated in the OpenAPI schema (see ``documented``).
Depth = documented(int, minimum=1, maximum=5)
AsOf = documented(int, nullable=True, minimum=0)
PageLimit = documented(int, nullable=True, minimum=1, maximum=selectors.ENTITY_PAGE_MAX)
Offset = documented(int, minimum=0, maximum=selectors.ENTITY_OFFSET_MAX)

EXTRACTION_EXAMPLE = {
    "entities_appeared": [{"id": "linfeng", "type": "角色", "mentions": ["林风"], "confidence": 0.95}],
    "entities_new": [],
    "state_changes": [
        {
            "entity_id": "linfeng",
            "field": "realm",
            "old": "炼气三层",
            "new": "炼气四层",
            "reason": "突破",
            "confidence": 0.9,
        }
    ],
    "relationships_new": [],
    "uncertain": [],
    "scenes": [],
    "chapter_meta": {},
}


@router.post(
    "{book}/chapters/{chapter}/extraction",
    response=IngestOut,
    summary="提交一章的抽取结果（Data Agent）",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}, "example": EXTRACTION_EXAMPLE}},
        }
    },
)
def extraction_ingest(request: HttpRequest, book: str, chapter: int):
    """Ingest the extraction JSON of a chapter in one transaction. Confidence > 0.8 is adopted,
    0.5–0.8 adopted with a warning, < 0.5 held in the pending queue. Re-posting replaces the chapter's
    previous extraction. Invalid JSON or unknown references → 422 naming the field."""
    payload = services.extraction_parse(raw=request.body)
    return services.extraction_ingest(book=book_get(slug=book), chapter=chapter, payload=payload)


@router.get("{book}/extraction-schema", response=dict[str, Any], summary="抽取结果的 JSON Schema")
def extraction_schema(request: HttpRequest, book: str) -> dict[str, Any]:
    """The JSON Schema of the extraction payload (every field documented), so an agent produces a valid
    one the first time; the same schema is the MCP ingest tool's input and docs/extraction.schema.json."""
    book_get(slug=book)
    return extraction_json_schema()


@router.get("{book}/chapters/{chapter}/extraction", response=S.ExtractionOut, summary="一章的抽取结果")
def extraction_get(request: HttpRequest, book: str, chapter: int) -> dict[str, Any]:
    """Counts, warnings, scenes, chapter_meta and uncertain mentions of the chapter's last extraction."""
    return selectors.extraction_get(book=book_get(slug=book), chapter=chapter)


@router.get("{book}/entities", response=list[S.EntityOut], summary="实体列表")
def entity_list(
    request: HttpRequest,
    book: str,
    type: str | None = None,
    tier: str | None = None,
    include_archived: bool = False,
    limit: PageLimit = None,
    offset: Offset = 0,
) -> list[dict]:
    """Entities of the book with aliases and current state, optionally of one type / tier; protagonist
    first, then by type and id. ``limit`` (1–1000) and ``offset`` page through a long list."""
    return selectors.entity_list(
        book=book_get(slug=book),
        type=type,
        tier=tier,
        include_archived=include_archived,
        limit=limit,
        offset=offset,
    )


@router.get("{book}/entities/core", response=list[S.EntityOut], summary="核心实体")
def entity_list_core(request: HttpRequest, book: str) -> list[dict]:
    """The 核心 entities, protagonist first."""
    return selectors.entity_list_core(book=book_get(slug=book))


@router.get("{book}/entities/stats", response=S.StatsOut, summary="实体统计")
def entity_stats(request: HttpRequest, book: str) -> dict:
    """Counts by type and tier, ambiguous aliases, changes, relationships, appearances, queue, top entities."""
    return selectors.entity_stats(book=book_get(slug=book))


@router.get("{book}/entities/by-alias", response=S.ByAliasOut, summary="按别名查实体")
def entities_by_alias(
    request: HttpRequest, book: str, alias: str, type: str | None = None, chapter: int | None = None
) -> dict:
    """Every entity an alias names (valid at ``chapter`` when given); ``resolved`` when exactly one."""
    return selectors.entities_by_alias(book=book_get(slug=book), alias=alias, type=type, chapter=chapter)


@router.get("{book}/entities/pending", response=list[S.PendingOut], summary="待确认队列")
def pending_list(request: HttpRequest, book: str, status: str = "pending") -> list[dict]:
    """Held writes, lowest confidence first."""
    return selectors.pending_list(book=book_get(slug=book), status=status)


@router.post("{book}/entities/pending/{pk}/confirm", response=S.ResolutionOut, summary="确认待确认项")
def pending_confirm(request: HttpRequest, book: str, pk: int, body: PendingConfirmIn) -> dict:
    """Confirm a held item and apply its write; ``entity`` picks an existing entity instead of the suggestion."""
    the_book = book_get(slug=book)
    entity = selectors.entity_get(book=the_book, ref=body.entity) if body.entity else None
    return services.pending_item_confirm(item=selectors.pending_get(book=the_book, pk=pk), entity=entity)


@router.post("{book}/entities/pending/{pk}/reject", response=S.ResolutionOut, summary="拒绝待确认项")
def pending_reject(request: HttpRequest, book: str, pk: int, body: PendingRejectIn) -> dict:
    """Reject a held item: nothing is written and a re-ingest does not queue it again."""
    the_book = book_get(slug=book)
    return services.pending_item_reject(item=selectors.pending_get(book=the_book, pk=pk), note=body.note)


@router.post("{book}/entities/merge", response=S.MergeOut, summary="合并两个实体")
def entity_merge(request: HttpRequest, book: str, body: MergeIn) -> dict:
    """Merge ``source`` into ``target``: aliases, appearances, changes and relationships move; the old id becomes an alias."""
    the_book = book_get(slug=book)
    source = selectors.entity_get(book=the_book, ref=body.source)
    target = selectors.entity_get(book=the_book, ref=body.target)
    counts = services.entity_merge(source=source, target=target)
    return {"source": body.source, "target": target.entity_id, "moved": counts}


@router.post("{book}/discover", response=DiscoverOut, summary="从正文发现角色 / 地点 / 势力")
def discover(request: HttpRequest, book: str, body: DiscoverIn) -> dict:
    """Propose the cast from the chapters' text alone (segmenter, dialogue attribution, naming patterns,
    co-occurrence); what is new goes to the pending queue as 发现的实体. Known, queued or rejected names
    are not proposed again. Confirming writes the entry into 设定/名册.yaml."""
    return book_discover(book=book_get(slug=book), min_count=body.min_count, types=body.types, limit=body.limit)


@router.get("{book}/entities/ambiguous-mentions", response=list[S.AmbiguousMentionOut], summary="歧义提及")
def ambiguous_mentions(request: HttpRequest, book: str, chapter: int | None = None) -> list[dict]:
    """Aliases found in chapter text that name several entities (reported, never attributed)."""
    return selectors.chapter_ambiguous_mentions(book=book_get(slug=book), chapter=chapter)


@router.get("{book}/entities/tag-issues", response=list[S.TagIssuesOut], summary="被跳过的手工标签")
def tag_issues(request: HttpRequest, book: str, chapter: int | None = None) -> list[dict]:
    """Manual entity tags skipped at finalize, with the reason."""
    return selectors.tag_issues_list(book=book_get(slug=book), chapter=chapter)


@router.get("{book}/entities/{ref}", response=S.EntityDetailOut, summary="实体详情")
def entity_detail(request: HttpRequest, book: str, ref: str, type: str | None = None, as_of: AsOf = None) -> dict:
    """An entity by id (else by alias) with aliases and its state now or as of chapter ``as_of``."""
    return selectors.entity_detail(book=book_get(slug=book), ref=ref, type=type, as_of=as_of)


@router.get("{book}/entities/{ref}/changes", response=S.ChangesOut, summary="实体的状态变更")
def entity_changes(
    request: HttpRequest,
    book: str,
    ref: str,
    field: str | None = None,
    from_chapter: int | None = None,
    to_chapter: int | None = None,
) -> dict:
    """Every state change of the entity in replay order."""
    return selectors.entity_changes_list(
        book=book_get(slug=book), ref=ref, field=field, from_chapter=from_chapter, to_chapter=to_chapter
    )


@router.get("{book}/entities/{ref}/relationships", response=S.RelationshipsOut, by_alias=True, summary="实体的关系")
def entity_relationships(request: HttpRequest, book: str, ref: str, as_of: AsOf = None) -> dict:
    """Relationships in both directions as of a chapter, each with its event history."""
    return selectors.entity_relationships(book=book_get(slug=book), ref=ref, as_of=as_of)


@router.get("{book}/entities/{ref}/graph", response=S.GraphOut, by_alias=True, summary="关系图")
def relationship_graph(request: HttpRequest, book: str, ref: str, depth: Depth = 1, as_of: AsOf = None) -> dict:
    """Entities within ``depth`` hops as of a chapter: nodes, edges and a Mermaid ``graph LR`` text."""
    return selectors.relationship_graph(book=book_get(slug=book), ref=ref, depth=depth, as_of=as_of)


@router.get("{book}/entities/{ref}/graph/mermaid", response=str, summary="关系图（Mermaid）")
def relationship_graph_mermaid(request: HttpRequest, book: str, ref: str, depth: Depth = 1, as_of: AsOf = None) -> str:
    """The Mermaid text of the relationship graph."""
    return selectors.relationship_graph_mermaid(book=book_get(slug=book), ref=ref, depth=depth, as_of=as_of)


@router.get("{book}/entities/{ref}/appearances", response=S.AppearancesOut, summary="实体出场")
def entity_appearances(request: HttpRequest, book: str, ref: str) -> dict:
    """Chapters the entity appears in, with counts, first offsets and the names used."""
    return selectors.entity_appearances(book=book_get(slug=book), ref=ref)


# ── characters (tags 设定 / 时间线: the reads of the settings, served here because they replay state) ──


@router.get("{book}/characters", response=list[S.CharacterRowOut], tags=["设定"], summary="列出角色")
def character_list(request: HttpRequest, book: str, status: str | None = None):
    """Characters with their current status and location, optionally only those with a given status."""
    return selectors.character_list(book=book_get(slug=book), status=status)


@router.get("{book}/characters/{name}", response=S.CharacterMetaOut, tags=["设定"], summary="角色：静态信息 + 当前状态")
def character_meta(request: HttpRequest, book: str, name: str, as_of: AsOf = None):
    """A character (by canonical name or alias, with a card or only in the roster): its static
    fields and its state now or as of chapter ``as_of`` (initial state + every change replayed)."""
    return selectors.character_meta(book=book_get(slug=book), name=name, as_of=as_of)


@router.get("{book}/characters/{name}/card", response=str, tags=["设定"], summary="整张角色卡")
def character_card(request: HttpRequest, book: str, name: str):
    """The whole character card: YAML front matter, then the body."""
    return selectors.character_card(book=book_get(slug=book), name=name)


@router.get("{book}/characters/{name}/section", response=str, tags=["设定"], summary="角色卡小节")
def character_section(request: HttpRequest, book: str, name: str, heading: str):
    """A ``##`` section of a character card."""
    return selectors.character_section(book=book_get(slug=book), name=name, heading=heading)


@router.get("{book}/aliases/resolve", response=S.AliasResolveOut, tags=["设定"], summary="别名解析")
def alias_resolve(request: HttpRequest, book: str, alias: str, type: str | None = None, chapter: int | None = None):
    """Resolve an alias to its canonical name; several entities → 409 with the candidates."""
    return selectors.alias_lookup(book=book_get(slug=book), alias=alias, type=type, chapter=chapter)


@router.get("{book}/timeline/character", response=S.CharacterTimelineOut, tags=["时间线"], summary="角色在场的时间线")
def timeline_character(request: HttpRequest, book: str, name: str, volume: int | None = None):
    """Timeline rows where a character (by canonical name or any alias) is present."""
    return selectors.timeline_character(book=book_get(slug=book), name=name, volume=volume)
