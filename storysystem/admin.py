"""Admin of the story system: the reference library (edit, enable/disable, export CSV) and the
books' story settings (build through the service, rewrite the .story-system files)."""

import io
import json
import zipfile
from urllib.parse import quote

from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponse
from django.utils.html import format_html

from kernel.exceptions import DomainError
from storysystem import selectors, services
from storysystem.markdown import story_markdown
from storysystem.models import ReferenceEntry, ReferenceLibrary, ReferenceTable, StorySetting


def _csv_response(tables: list[ReferenceTable]) -> HttpResponse:
    if len(tables) == 1:
        table = tables[0]
        response = HttpResponse(services.table_csv(table=table), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f"attachment; filename*=UTF-8''{_quote(table.name)}.csv"
        return response
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for table in tables:
            archive.writestr(f"{table.library.name}/{table.name}.csv", services.table_csv(table=table))
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="references.zip"'
    return response


def _quote(name: str) -> str:
    return quote(name)


@admin.register(ReferenceLibrary)
class ReferenceLibraryAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "table_count", "source_dir", "imported_at"]
    list_editable = ["enabled"]
    readonly_fields = ["source_dir", "imported_at"]
    actions = ["export_csv"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_tables=Count("tables"))

    @admin.display(description="表数", ordering="n_tables")
    def table_count(self, obj: ReferenceLibrary) -> int:
        return obj.n_tables

    @admin.action(description="导出为 CSV（zip）")
    def export_csv(self, request, queryset):
        return _csv_response(list(ReferenceTable.objects.filter(library__in=queryset).select_related("library")))


@admin.register(ReferenceTable)
class ReferenceTableAdmin(admin.ModelAdmin):
    list_display = ["name", "library", "entry_count", "key_column", "has_bom"]
    list_filter = ["library"]
    search_fields = ["name"]
    list_select_related = ["library"]
    readonly_fields = ["columns", "key_column", "has_bom", "line_terminator"]
    actions = ["export_csv"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_entries=Count("entries"))

    @admin.display(description="条目数", ordering="n_entries")
    def entry_count(self, obj: ReferenceTable) -> int:
        return obj.n_entries

    @admin.action(description="导出为 CSV（一张表为 .csv，多张为 zip）")
    def export_csv(self, request, queryset):
        return _csv_response(list(queryset.select_related("library")))


class ReferenceEntryForm(forms.ModelForm):
    class Meta:
        model = ReferenceEntry
        # the service's editable fields (one list); the raw CSV row is shown read-only, not edited
        fields = ["table", "code", *(name for name in services.ENTRY_FIELDS if name != "raw")]

    def clean_extra(self):
        extra = self.cleaned_data.get("extra")
        if not isinstance(extra, dict):
            raise forms.ValidationError("extra 必须是「列名: 文本」的 JSON 对象")
        return extra


@admin.register(ReferenceEntry)
class ReferenceEntryAdmin(admin.ModelAdmin):
    form = ReferenceEntryForm
    list_display = ["code", "table", "category", "level", "genres", "summary"]
    list_filter = ["table__library", "table__name", "level"]
    search_fields = ["code", "keywords", "intents", "summary"]
    list_select_related = ["table", "table__library"]
    show_full_result_count = False
    autocomplete_fields = ["table"]
    readonly_fields = ["raw", "updated_at"]
    fields = ["table", "code", *services.ENTRY_FIELDS, "updated_at"]

    def save_model(self, request, obj, form, change):
        services.entry_save(entry=obj)


class StorySettingForm(forms.ModelForm):
    """Builds through the service: a chapter that touches a locked field is refused here, with the
    service's message, instead of being saved."""

    class Meta:
        model = StorySetting
        fields = ["book", "chapter", "query", "explicit_genre", "overrides", "added_anti_patterns"]

    def clean(self):
        data = super().clean()
        book = data.get("book")
        if book is None:
            return data
        try:
            self.built = self._build(persist=False)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from exc
        return data

    def _build(self, *, persist: bool):
        data = self.cleaned_data
        common = {
            "book": data["book"],
            "query": data.get("query") or "",
            "genre": data.get("explicit_genre") or None,
            "overrides": data.get("overrides") or {},
            "add_anti_patterns": data.get("added_anti_patterns") or [],
            "persist": persist,
        }
        return services.story_setting_build(number=data.get("chapter"), **common)


@admin.register(StorySetting)
class StorySettingAdmin(admin.ModelAdmin):
    form = StorySettingForm
    list_display = ["book", "chapter_label", "query", "explicit_genre", "inferred_genre", "updated_at"]
    list_filter = ["book"]
    search_fields = ["book__slug", "query"]
    list_select_related = ["book"]
    autocomplete_fields = ["book"]
    readonly_fields = ["markdown_preview", "created_at", "updated_at"]
    actions = ["write_files"]

    @admin.display(description="范围", ordering="chapter")
    def chapter_label(self, obj: StorySetting) -> str:
        return "总设定" if obj.chapter is None else f"第{obj.chapter}章"

    @admin.display(description="推断题材")
    def inferred_genre(self, obj: StorySetting) -> str:
        return (obj.data.get("meta") or {}).get("inferred_genre") or ""

    @admin.display(description="设定（Markdown 投影）")
    def markdown_preview(self, obj: StorySetting) -> str:
        if not obj.pk:
            return "保存后生成"
        try:
            data = obj.data if obj.chapter is None else selectors.chapter_story(book=obj.book, number=obj.chapter)
            text = story_markdown(data)
        except (DomainError, KeyError):
            text = json.dumps(obj.data, ensure_ascii=False, indent=2)
        return format_html("<pre style='white-space:pre-wrap'>{}</pre>", text)

    def save_model(self, request, obj, form, change):
        _, files = form._build(persist=True)
        saved = StorySetting.objects.get(book=obj.book, chapter=obj.chapter)
        obj.pk, obj.data, obj.created_at = saved.pk, saved.data, saved.created_at
        self.message_user(request, f"已生成并写出 {len(files)} 个文件到 {obj.book.root}/.story-system/")

    @admin.action(description="重新写出 .story-system 文件")
    def write_files(self, request, queryset):
        books = {s.book for s in queryset.select_related("book")}
        for book in books:
            try:
                files = services.story_files_write(book=book)
            except DomainError as exc:
                self.message_user(request, f"{book.slug}：{exc.message}", level=messages.ERROR)
                continue
            self.message_user(request, f"{book.slug}：已写出 {len(files)} 个文件")
