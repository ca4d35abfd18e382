"""REST write endpoints of the storysystem app (mounted under /api/books/): build and persist a setting.

The reads are declared once in ``storysystem/interfaces.py``; ``webnovel/api.py`` generates their GET
operations on this router.
"""

from django.http import HttpRequest
from ninja import Router

from core.selectors import book_get
from storysystem import schemas, services

router = Router(tags=["故事系统"])


@router.post("{book}/story-system/build", response=schemas.BuildOut, summary="生成并保存设定")
def story_build(request: HttpRequest, book: str, payload: schemas.BuildIn):
    """Build the master setting (or chapter N's override) and, unless ``persist`` is false, store it
    and write ``<book>/.story-system/``. A chapter touching a locked field is refused with 422."""
    data, files = services.story_setting_build(
        book=book_get(slug=book),
        chapter=payload.chapter,
        query=payload.query,
        genre=payload.genre,
        overrides=payload.set,
        add_anti_patterns=payload.add_anti_patterns,
        remove_anti_patterns=payload.remove_anti_patterns,
        persist=payload.persist,
    )
    return {"persisted": payload.persist, "files": files, "story_system": data}
