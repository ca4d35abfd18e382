"""REST write endpoints of the entities app (mounted under /api/books/): ingestion, curation, discovery.

The reads are declared once in ``entities/interfaces.py`` and the pending queue's confirm / reject in
``entities/journal_ops.py`` (their ``WriteDoor``); ``webnovel/api.py`` generates their GET and POST
operations on this router."""

from django.http import HttpRequest
from ninja import Router

from core.selectors import book_get
from entities import schemas as S
from entities import selectors
from entities.discovery.bounds import REST_MAX_CHARS
from entities.discovery.schemas import DiscoverIn, DiscoverOut
from entities.discovery.services import book_discover
from entities.schemas import IngestOut, MergeIn
from entities.services import ingest, marks

router = Router(tags=["实体"])

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
    "{book}/chapters/{number}/extraction",
    response=IngestOut,
    summary="提交一章的抽取结果（Data Agent）",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}, "example": EXTRACTION_EXAMPLE}},
        }
    },
)
def extraction_ingest(request: HttpRequest, book: str, number: int):
    """Ingest the extraction JSON of a chapter in one transaction. Confidence > 0.8 is adopted,
    0.5–0.8 adopted with a warning, < 0.5 held in the pending queue. Re-posting replaces the chapter's
    previous extraction. Invalid JSON or unknown references → 422 naming the field."""
    payload = ingest.extraction_parse(raw=request.body)
    return ingest.extraction_ingest(book=book_get(slug=book), number=number, payload=payload)


@router.post("{book}/entities/merge", response=S.MergeOut, summary="合并两个实体")
def entity_merge(request: HttpRequest, book: str, body: MergeIn) -> dict:
    """Merge ``source`` into ``target``: aliases, appearances, changes and relationships move; the old id becomes an alias."""
    the_book = book_get(slug=book)
    source = selectors.entity_get(book=the_book, ref=body.source)
    target = selectors.entity_get(book=the_book, ref=body.target)
    counts = marks.entity_merge(source=source, target=target)
    return {"source": body.source, "target": target.entity_id, "moved": counts}


@router.post("{book}/discover", response=DiscoverOut, summary="从正文发现角色 / 地点 / 势力")
def discover(request: HttpRequest, book: str, body: DiscoverIn) -> dict:
    """Propose the cast from the chapters' text alone (segmenter, dialogue attribution, naming patterns,
    co-occurrence); what is new goes to the pending queue as 发现的实体. Known, queued or rejected names
    are not proposed again. Confirming writes the entry into 设定/名册.yaml."""
    # A request reads at most REST_MAX_CHARS characters (about a minute of the segmenter); the report's
    # bounds say what was left out, and the command line reads more.
    return book_discover(
        book=book_get(slug=book),
        min_count=body.min_count,
        types=body.types,
        limit=body.limit,
        max_chars=REST_MAX_CHARS,
    )


# ── characters (tags 设定 / 时间线: the reads of the settings, served here because they replay state) ──
