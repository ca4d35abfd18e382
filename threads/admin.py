"""Threads and secrets come from their files (线索/、信息差/): shown read-only here, with the file to edit
(``core.fileowned``)."""

from django.contrib import admin

from core.fileowned import FileOwnedAdmin, FileOwnedInline
from threads.models import Secret, Thread, ThreadHistoryEntry


class ThreadHistoryInline(FileOwnedInline, admin.TabularInline):
    model = ThreadHistoryEntry
    extra = 0

    def parent_file_owned(self, obj: Thread) -> bool:
        return bool(obj.source_path)


@admin.register(Thread)
class ThreadAdmin(FileOwnedAdmin, admin.ModelAdmin):
    list_display = [
        "book",
        "thread_id",
        "type",
        "title",
        "strength",
        "status",
        "opened_chapter",
        "planned_end",
        "planned_end_volume",
    ]
    list_filter = ["book", "type", "strength", "status"]
    search_fields = ["thread_id", "title", "description"]
    list_select_related = ["book"]
    show_full_result_count = False
    inlines = [ThreadHistoryInline]

    def has_add_permission(self, request):
        return False  # a thread is a file under 线索/


@admin.register(Secret)
class SecretAdmin(FileOwnedAdmin, admin.ModelAdmin):
    list_display = ["book", "secret_id", "title", "reader_knows", "registered_chapter", "reader_told_chapter"]
    list_filter = ["book", "reader_knows"]
    search_fields = ["secret_id", "title", "content"]
    list_select_related = ["book"]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False  # a secret is a file under 信息差/
