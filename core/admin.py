import math

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse
from django.urls import reverse

from core.fileowned import FileOwnedAdmin, FileOwnedInline, file_note
from core.models import ApiKey, Book, Chapter, Document, Fingerprint, Section, SourceFile, TimelineRow, Volume
from core.services import apikey_create
from kernel.ratelimit import limiter_for


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin (and dashboard) login, refusing a user name or a client address after
    ``WEBNOVEL_LOGIN_FAILURE_RATE`` failures (default 10 in 15 minutes, per worker process)."""

    def clean(self):
        username = (self.cleaned_data.get("username") or "").strip().lower()
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        callers = [f"login-user:{username}", f"login-ip:{address}"]
        limiter = limiter_for(settings.WEBNOVEL_LOGIN_FAILURE_RATE)
        wait = max(limiter.wait(caller) for caller in callers)
        if wait:
            raise ValidationError(
                f"登录失败次数过多（{limiter.seconds / 60:g} 分钟内 {limiter.count} 次）：请 {math.ceil(wait / 60)} 分钟后再试",
                code="throttled",
            )
        try:
            return super().clean()
        except ValidationError:
            for caller in callers:
                limiter.hit(caller)
            raise


admin.site.login_form = ThrottledAdminAuthenticationForm
admin.site.site_header = "网文连续性数据库 · 管理后台"
admin.site.site_title = "网文连续性数据库"
admin.site.index_title = "管理首页"


class FileRowsAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """Rows read from the book's files only (chapters, documents, timelines …): never added here."""

    def has_add_permission(self, request):
        return False


class VolumeInline(FileOwnedInline, admin.TabularInline):
    model = Volume
    extra = 0

    def parent_file_owned(self, obj: Book) -> bool:
        return bool(obj.root)


@admin.register(Book)
class BookAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """book.yaml owns the book's description; its folder (``root``) is where the files are."""

    list_display = ["slug", "title", "genre", "built_at"]
    search_fields = ["slug", "title"]
    inlines = [VolumeInline]
    readonly_fields = ["built_at", "build_report", "created_at", "journal_id"]  # the journal names it (core/journal.py)
    file_owned_fields = ("slug", "title", "genre", "config", "thresholds", "style_baseline_start", "style_baseline_end")

    def file_origin(self, obj: Book) -> str | None:
        return file_note("book.yaml") + "（卷来自 book.yaml 的 volumes 与卷文件夹名）" if obj.root else None


@admin.register(Chapter)
class ChapterAdmin(FileRowsAdmin):
    list_display = ["book", "number", "title", "volume", "perspective", "chapter_position", "hook_type", "word_count"]
    list_filter = ["book", "volume", "chapter_position", "mood_position", "key_chapter"]
    search_fields = ["title", "summary", "perspective"]
    list_select_related = ["book"]
    show_full_result_count = False
    ordering = ["book", "number"]


class SectionInline(FileOwnedInline, admin.TabularInline):
    model = Section
    extra = 0
    fields = ["order", "heading", "level", "body"]

    def parent_file_owned(self, obj: Document) -> bool:
        return bool(obj.source_path)


@admin.register(Document)
class DocumentAdmin(FileRowsAdmin):
    list_display = ["book", "kind", "key", "title", "source_path"]
    list_filter = ["book", "kind"]
    search_fields = ["key", "title", "body"]
    list_select_related = ["book"]
    inlines = [SectionInline]


@admin.register(Section)
class SectionAdmin(FileRowsAdmin):
    list_display = ["document", "order", "heading", "level"]
    list_filter = ["document__book", "document__kind"]
    search_fields = ["heading", "body"]
    list_select_related = ["document", "document__book"]
    show_full_result_count = False

    def file_origin(self, obj: Section) -> str | None:
        return file_note(obj.document.source_path) if obj.document.source_path else None


@admin.register(TimelineRow)
class TimelineRowAdmin(FileRowsAdmin):
    list_display = ["book", "volume", "order", "chapter", "story_time", "event"]
    list_filter = ["book", "volume"]
    search_fields = ["event", "story_time"]
    list_select_related = ["book"]
    show_full_result_count = False


@admin.register(Fingerprint)
class FingerprintAdmin(FileRowsAdmin):
    list_display = ["book", "start_chapter", "end_chapter", "is_baseline"]
    list_filter = ["book", "is_baseline"]
    list_select_related = ["book"]
    show_full_result_count = False

    def file_origin(self, obj: Fingerprint) -> str | None:
        path = (
            Chapter.objects.filter(book_id=obj.book_id, number=obj.start_chapter)
            .values_list("source_path", flat=True)
            .first()
        )
        return f"由 {path} 的正文计算（文风基线来自 book.yaml），请在文件中修改" if path else None


@admin.register(SourceFile)
class SourceFileAdmin(FileRowsAdmin):
    list_display = ["book", "path", "kind", "size", "content_hash"]
    list_filter = ["book", "kind"]
    search_fields = ["path"]
    list_select_related = ["book"]
    show_full_result_count = False

    def file_origin(self, obj: SourceFile) -> str | None:
        return f"记录 {obj.path} 的大小与哈希，由 rebuild / sync 维护" if obj.path else None


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with the ``apikey`` command or the 'add' form; the raw key is shown once, in
    the answer to the form (never in a message, which Django keeps in a cookie)."""

    list_display = ["name", "prefix", "scope", "book", "revoked", "created_at", "last_used_at"]
    list_filter = ["scope", "revoked", "book"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    fields = ["name", "scope", "book", "revoked", "prefix", "key_hash", "created_at", "last_used_at"]
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        # the one way a key is made (the command and the API use it too): hash, prefix, scope check
        key, raw = apikey_create(name=obj.name, scope=obj.scope, book=obj.book)
        if obj.revoked:
            key.revoked = True
            key.save(update_fields=["revoked"])
        obj.pk, obj.prefix, obj.key_hash, obj.created_at = key.pk, key.prefix, key.key_hash, key.created_at
        obj._state.adding = False
        obj._state.db = key._state.db
        request._apikey_raw = raw  # shown by response_add, in that response only

    def response_add(self, request, obj, post_url_continue=None):
        # The raw key is rendered into this one response and nowhere else: the usual "added"
        # message would carry it in the messages cookie (and into the next page, and logs).
        raw = getattr(request, "_apikey_raw", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "key": obj,
            "raw": raw,
            "opts": self.opts,
            "changelist_url": reverse("admin:webnovel_apikey_changelist"),
        }
        response = TemplateResponse(request, "admin/webnovel/apikey/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="吊销所选密钥")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"已吊销 {count} 个密钥")
