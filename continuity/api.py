"""REST endpoints of the continuity check (mounted under /api/books/): check a draft, waive a finding.

The re-check of finalized chapters is a read, declared in ``continuity/interfaces.py``."""

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from continuity import selectors, services
from continuity.schemas import DraftIn, WaiverIn
from core.auth import api_auth, rate_check
from core.selectors import book_get

router = Router(tags=["机检"])
# the check is a costly read (a draft up to 200k characters): counted per caller, one count across doors
CONTINUITY_RATE = ("WEBNOVEL_CONTINUITY_RATE", "机检")


# writes nothing: a read key may call it (core.auth, reads=True)
@router.post(
    "{book}/continuity", response=dict[str, Any], summary="机检一篇草稿", auth=api_auth("webnovel", reads=True)
)
def draft_check(request: HttpRequest, book: str, payload: DraftIn):
    """Check a draft against the canon as of chapter N−1: findings with kind, severity, line, quote, evidence, suggestion. Writes nothing: a read key may call it; rate-limited per key (WEBNOVEL_CONTINUITY_RATE, 429 with Retry-After)."""
    rate_check(request, setting=CONTINUITY_RATE[0], what=CONTINUITY_RATE[1])
    return selectors.draft_check(book=book_get(slug=book), text=payload.text, chapter=payload.chapter)


@router.post("{book}/continuity/waivers", response={201: dict[str, Any]}, summary="豁免一条机检结果")
def waiver_add(request: HttpRequest, book: str, payload: WaiverIn):
    """Mark a finding intended; written into the book folder (.continuity/waivers.yaml)."""
    result = services.waiver_add(
        book=book_get(slug=book), number=payload.chapter, kind=payload.kind, term=payload.term, note=payload.note
    )
    return Status(201, result)
