"""REST endpoints of the storysystem app (mounted under /api/books/).

Thin adapters over ``storysystem.selectors`` (the same functions ``storysystem/interfaces.py``
registers for the ``story`` command) and, for the one write, ``storysystem.services``.
"""

from django.http import HttpRequest, HttpResponse
from ninja import Router

from core.schemas import documented
from core.selectors import book_get
from kernel.exceptions import InvalidInput
from storysystem import schemas, selectors, services
from storysystem.markdown import story_markdown

router = Router(tags=["故事系统"])

# Limits selectors.story_search enforces, stated in the OpenAPI schema (see ``documented``).
StoryQuery = documented(str, minLength=1)
MaxResults = documented(int, minimum=1, maximum=100)
StoryFormat = documented(str, enum=["json", "markdown"])


def markdown_too(out: type) -> dict:
    """The 200 answer of an endpoint with ``format=markdown``: ``out`` as JSON, or text/markdown."""
    json_body = {"schema": {"$ref": f"#/components/schemas/{out.__name__}"}}
    markdown = {"schema": {"type": "string"}}
    return {
        "responses": {
            "200": {"description": "OK", "content": {"application/json": json_body, "text/markdown": markdown}}
        }
    }


@router.get("{book}/story-system/search", response=schemas.SearchOut, summary="检索参考资料库")
def story_search(
    request: HttpRequest,
    book: str,
    q: StoryQuery,
    table: str | None = None,
    skill: str | None = None,
    genre: str | None = None,
    max_results: MaxResults = 10,
):
    """BM25 search of the reference library, filtered by table / skill / genre."""
    return selectors.story_search(
        book=book_get(slug=book), q=q, table=table, skill=skill, genre=genre, max_results=max_results
    )


@router.get("{book}/story-system/route", response=schemas.RouteOut, summary="题材路由")
def story_route(request: HttpRequest, book: str, q: str = "", genre: str | None = None):
    """The route a query takes: explicit genre, keyword hits (with evidence), fuzzy, or generic."""
    return selectors.story_route(book=book_get(slug=book), q=q, genre=genre)


def _as(data: dict, format: str):
    if format == "markdown":
        return HttpResponse(story_markdown(data), content_type="text/markdown; charset=utf-8")
    if format != "json":
        raise InvalidInput(f"format 只能是 json 或 markdown（收到 {format}）", extra={"field": "format"})
    return data


@router.get(
    "{book}/story-system/master",
    response=schemas.StorySystemOut,
    summary="全书总设定",
    openapi_extra=markdown_too(schemas.StorySystemOut),
)
def story_master(request: HttpRequest, book: str, format: StoryFormat = "json"):
    """The book's stored master StorySystemDict (``format=markdown``: its Markdown projection)."""
    return _as(selectors.master_story(book=book_get(slug=book)), format)


@router.get(
    "{book}/story-system/chapters/{chapter}",
    response=schemas.ChapterStoryOut,
    summary="章节设定",
    openapi_extra=markdown_too(schemas.ChapterStoryOut),
)
def story_chapter(request: HttpRequest, book: str, chapter: int, format: StoryFormat = "json"):
    """A chapter's stored setting as a StorySystemDict merged with the current master (or Markdown)."""
    return _as(selectors.chapter_story(book=book_get(slug=book), chapter=chapter), format)


@router.get("{book}/story-system/chapters/{chapter}/effective", response=schemas.EffectiveOut, summary="某章的生效设定")
def story_effective(request: HttpRequest, book: str, chapter: int):
    """The effective setting for a chapter: master merged with the chapter override, each field with its origin."""
    return selectors.chapter_effective(book=book_get(slug=book), chapter=chapter)


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
