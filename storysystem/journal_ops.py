"""The story system's journaled write, declared once with its replayer (``kernel.journal_ops``): a
setting built for a chapter (or the book) and saved. Registered in ``StorysystemConfig.ready()``."""

from typing import Any

from core.models import Book
from kernel.journal_ops import WriteDoor, journal_op
from storysystem.services import story_setting_build, story_setting_save


def _build_door(book: Book, body: Any) -> dict[str, Any]:
    data, files = story_setting_build(
        book=book,
        number=body.chapter,
        query=body.query,
        genre=body.genre,
        overrides=body.set,
        add_anti_patterns=body.add_anti_patterns,
        remove_anti_patterns=body.remove_anti_patterns,
        persist=body.persist,
    )
    return {"persisted": body.persist, "files": files, "story_system": data}


@journal_op(
    "story.setting.save",
    service=story_setting_build,
    schema="storysystem.schemas:BuildIn",
    door=WriteDoor(
        tool="story-system-build",
        description="生成并保存 Story System 设定：不给 chapter 是全书总设定，给 chapter 是该章的覆盖设定；"
        'set 显式指定字段（如 {"节奏策略": "慢热"}）。persist=false 只预览不保存。章节触碰锁定字段返回 422。',
        run=_build_door,
        response="storysystem.schemas:BuildOut",
        order=40,
        path="/story-system/build",
        summary="生成并保存设定",
        doc="Build the master setting (or chapter N's override) and, unless ``persist`` is false, store it\n"
        "and write ``<book>/.story-system/``. A chapter touching a locked field is refused with 422.",
        body="payload",
        name="story_build",
    ),
)
def _story_setting(book: Book, data: Any, e: dict) -> None:
    if not isinstance(data, dict):
        raise TypeError("story.setting.save 的附件应是 JSON 对象")
    story_setting_save(
        book=book,
        number=e["chapter"],
        query=e["query"],
        explicit_genre=e["explicit_genre"],
        overrides=e["overrides"],
        added_anti_patterns=e["added_anti_patterns"],
        data=data,
    )
