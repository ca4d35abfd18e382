"""Read-mostly records: extractions, appearances, ambiguous mentions, tag applications, legacy rows."""

from pathlib import Path

from django.contrib import admin

from core.fileowned import FileOwnedAdmin
from entities.admin.common import SourceFilter, SourceNamed
from entities.admin.pending import NamedChangeList
from entities.models import AmbiguousMention, Appearance, Extraction, LegacyRecord, TagApplication
from entities.pending_text import candidates_text, entity_names
from entities.services.curation import chapter_file_note


@admin.register(Extraction)
class ExtractionAdmin(SourceNamed, FileOwnedAdmin, admin.ModelAdmin):
    list_display = ["chapter", "book", "source_name", "warning_count", "updated_at"]
    list_filter = ["book", SourceFilter]
    readonly_fields = [
        "book",
        "chapter",
        "payload",
        "warnings",
        "scenes",
        "chapter_meta",
        "uncertain",
        "summary",
        "source_name",
    ]
    list_select_related = ["book"]
    show_full_result_count = False

    def file_origin(self, obj: Extraction) -> str | None:
        if obj.source != "extraction" or not obj.book.root:
            return None
        files = sorted(Path(obj.book.root, ".journal", "extractions").glob(f"{obj.chapter:04d}-*.json"))
        if not files:
            return None
        return f"来自 .journal/extractions/{files[-1].name}，请在文件中修改后运行 sync"

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="警告数")
    def warning_count(self, obj: Extraction) -> int:
        return len(obj.warnings)


@admin.register(Appearance)
class AppearanceAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """Read-only: the scan and the chapter tags derive appearances from the chapter files; ingestion and
    pending decisions write the others (re-ingest or decide again to change them)."""

    list_display = ["entity", "chapter", "count", "first_offset", "source"]
    list_filter = ["book", "source"]
    search_fields = ["entity__entity_id", "entity__canonical_name"]
    list_select_related = ["entity"]
    show_full_result_count = False

    def file_origin(self, obj: Appearance) -> str | None:
        if obj.source not in (Appearance.Source.SCAN, Appearance.Source.TAG):
            return None
        return chapter_file_note(book_id=obj.book_id, number=obj.chapter, what="正文（扫描提及与实体标签）")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AmbiguousMention)
class AmbiguousMentionAdmin(admin.ModelAdmin):
    """Read-only: the scan of the chapter files finds these (an alias naming several entities)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    list_display = ["alias", "chapter", "count", "candidate_names", "generic", "book"]
    list_filter = ["book", "generic"]
    search_fields = ["alias"]
    list_select_related = ["book"]
    show_full_result_count = False

    def get_changelist(self, request, **kwargs):
        return NamedChangeList

    @staticmethod
    def row_payload(obj: AmbiguousMention) -> dict:
        return {"candidates": obj.candidates if isinstance(obj.candidates, list) else []}

    @admin.display(description="候选实体")
    def candidate_names(self, obj: AmbiguousMention) -> str:
        names = getattr(obj, "entity_names", None)
        if names is None:
            names = entity_names(book_ids=[obj.book_id], payloads=[self.row_payload(obj)])
        return candidates_text(book_id=obj.book_id, candidates=self.row_payload(obj)["candidates"], names=names)


@admin.register(TagApplication)
class TagApplicationAdmin(FileOwnedAdmin, admin.ModelAdmin):
    list_display = ["chapter", "book", "applied_at"]
    list_filter = ["book"]
    readonly_fields = ["book", "chapter", "applied", "issues"]
    show_full_result_count = False

    def file_origin(self, obj: TagApplication) -> str | None:
        return chapter_file_note(book_id=obj.book_id, number=obj.chapter)

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(LegacyRecord)
class LegacyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "book", "updated_at"]
    list_filter = ["book"]
    search_fields = ["key"]
    readonly_fields = ["book", "key", "value", "source_path"]
    show_full_result_count = False
