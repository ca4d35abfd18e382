"""The story system's journaled write, declared once with its replayer (``kernel.journal_ops``): a
setting built for a chapter (or the book) and saved. Registered in ``StorysystemConfig.ready()``."""

from typing import Any

from core.models import Book
from kernel.journal_ops import journal_op
from storysystem.services import story_setting_build, story_setting_save


@journal_op("story.setting.save", service=story_setting_build, schema="storysystem.schemas:BuildIn")
def _story_setting(book: Book, data: Any, e: dict) -> None:
    if not isinstance(data, dict):
        raise TypeError("story.setting.save 的附件应是 JSON 对象")
    story_setting_save(
        book=book,
        chapter=e["chapter"],
        query=e["query"],
        explicit_genre=e["explicit_genre"],
        overrides=e["overrides"],
        added_anti_patterns=e["added_anti_patterns"],
        data=data,
    )
