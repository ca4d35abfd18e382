"""REST write endpoints of the storysystem app (mounted under /api/books/): build and persist a setting.

The reads are declared once in ``storysystem/interfaces.py``; ``webnovel/api.py`` generates their GET
operations on this router.
"""

from django.http import HttpRequest
from ninja import Router

from core.selectors import book_get
from kernel.exceptions import InvalidInput
from storysystem import schemas, services

router = Router(tags=["故事系统"])


@router.post("{book}/story-system/build", response=schemas.BuildOut, summary="生成并保存设定")
def story_build(request: HttpRequest, book: str, payload: schemas.BuildIn):
    """Build the master setting (or chapter N's override) and, unless ``persist`` is false, store it
    and write ``<book>/.story-system/``. A chapter touching a locked field is refused with 422."""
    target = book_get(slug=book)
    if payload.chapter is None:
        if payload.remove_anti_patterns:
            raise InvalidInput("remove_anti_patterns 只适用于章节（且总被拒绝）；总设定请直接重建")
        data, files = services.story_master_build(
            book=target,
            query=payload.query,
            genre=payload.genre,
            overrides=payload.set,
            add_anti_patterns=payload.add_anti_patterns,
            persist=payload.persist,
        )
    else:
        data, files = services.story_chapter_build(
            book=target,
            chapter=payload.chapter,
            query=payload.query,
            genre=payload.genre,
            overrides=payload.set,
            add_anti_patterns=payload.add_anti_patterns,
            remove_anti_patterns=payload.remove_anti_patterns,
            persist=payload.persist,
        )
    return {"persisted": payload.persist, "files": files, "story_system": data}
