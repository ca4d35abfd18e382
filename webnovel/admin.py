from django.contrib import admin

from webnovel.models import ApiKey, Book, Chapter, Document, Fingerprint, Section, SourceFile, TimelineRow, Volume


class VolumeInline(admin.TabularInline):
    model = Volume
    extra = 0


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "genre", "built_at"]
    search_fields = ["slug", "title"]
    inlines = [VolumeInline]
    readonly_fields = ["built_at", "build_report", "created_at"]


@admin.register(Chapter)
class ChapterAdmin(admin.ModelAdmin):
    list_display = ["book", "number", "title", "volume", "perspective", "chapter_position", "hook_type", "word_count"]
    list_filter = ["book", "volume", "chapter_position", "mood_position", "key_chapter"]
    search_fields = ["title", "summary", "perspective"]
    list_select_related = ["book"]
    show_full_result_count = False
    ordering = ["book", "number"]


class SectionInline(admin.TabularInline):
    model = Section
    extra = 0
    fields = ["order", "heading", "level", "body"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["book", "kind", "key", "title", "source_path"]
    list_filter = ["book", "kind"]
    search_fields = ["key", "title", "body"]
    list_select_related = ["book"]
    inlines = [SectionInline]


@admin.register(Section)
class SectionAdmin(admin.ModelAdmin):
    list_display = ["document", "order", "heading", "level"]
    list_filter = ["document__book", "document__kind"]
    search_fields = ["heading", "body"]
    list_select_related = ["document", "document__book"]
    show_full_result_count = False


@admin.register(TimelineRow)
class TimelineRowAdmin(admin.ModelAdmin):
    list_display = ["book", "volume", "order", "chapter", "story_time", "event"]
    list_filter = ["book", "volume"]
    search_fields = ["event", "story_time"]
    list_select_related = ["book"]
    show_full_result_count = False


@admin.register(Fingerprint)
class FingerprintAdmin(admin.ModelAdmin):
    list_display = ["book", "start_chapter", "end_chapter", "is_baseline"]
    list_filter = ["book", "is_baseline"]
    list_select_related = ["book"]
    show_full_result_count = False


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = ["book", "path", "kind", "size", "content_hash"]
    list_filter = ["book", "kind"]
    search_fields = ["path"]
    list_select_related = ["book"]
    show_full_result_count = False


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with the ``apikey`` command or the 'add' form; the raw key is shown once."""

    list_display = ["name", "prefix", "scope", "book", "revoked", "created_at", "last_used_at"]
    list_filter = ["scope", "revoked", "book"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    fields = ["name", "scope", "book", "revoked", "prefix", "key_hash", "created_at", "last_used_at"]
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if not change:
            from webnovel.models.apikey import apikey_hash

            raw = ApiKey.generate_raw()
            obj.prefix, obj.key_hash = raw[:10], apikey_hash(raw)
            super().save_model(request, obj, form, change)
            self.message_user(request, f"新密钥（只显示这一次，请立即保存）：{raw}")
        else:
            super().save_model(request, obj, form, change)

    @admin.action(description="吊销所选密钥")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"已吊销 {count} 个密钥")
