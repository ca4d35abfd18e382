from django.contrib import admin

from threads.models import Secret, Thread, ThreadHistoryEntry


class ThreadHistoryInline(admin.TabularInline):
    model = ThreadHistoryEntry
    extra = 0


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
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


@admin.register(Secret)
class SecretAdmin(admin.ModelAdmin):
    list_display = ["book", "secret_id", "title", "reader_knows", "registered_chapter", "reader_told_chapter"]
    list_filter = ["book", "reader_knows"]
    search_fields = ["secret_id", "title", "content"]
    list_select_related = ["book"]
    show_full_result_count = False
