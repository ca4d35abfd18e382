"""Admin of the entities app: entities with aliases, state history and relationships inline; the
pending queue (lowest confidence first) with confirm / confirm-as / reject; merge. Every write of a
curation action goes through ``entities.services`` and reports counts with ``message_user``."""

import re

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from entities import selectors
from entities.discovery.services import discovery_merge, discovery_split
from entities.models import (
    Alias,
    AmbiguousMention,
    Appearance,
    Entity,
    Extraction,
    LegacyRecord,
    PendingItem,
    Relationship,
    RelationshipEvent,
    StateChange,
    TagApplication,
)
from entities.pending_text import SOURCE_NAMES, candidates_text, entity_names, pending_sentence
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_items_bulk
from entities.services.writes import (
    entities_archive,
    relationship_summary_refresh,
    state_change_check,
    state_change_curate,
)
from kernel.exceptions import DomainError


class SourceFilter(admin.SimpleListFilter):
    """The ``source`` column (a plain string: file, extraction, migration …) filtered under Chinese names."""

    title = "来源"
    parameter_name = "source"

    def lookups(self, request, model_admin):
        values = model_admin.get_queryset(request).order_by().values_list("source", flat=True).distinct()
        return [(v, SOURCE_NAMES.get(v, v)) for v in sorted(set(values))]

    def queryset(self, request, queryset):
        return queryset.filter(source=self.value()) if self.value() else queryset


def _intermediate(modeladmin, request, queryset, *, form, title, explanation, action, submit_label):
    return TemplateResponse(
        request,
        "admin/entities/action_form.html",
        {
            **modeladmin.admin_site.each_context(request),
            "opts": modeladmin.model._meta,
            "title": title,
            "explanation": explanation,
            "queryset": queryset,
            "form": form,
            "action": action,
            "submit_label": submit_label,
        },
    )


# Inline rows fit a 1280 px change page: short inputs for short values
COMPACT_INPUTS = {
    models.CharField: {"widget": forms.TextInput(attrs={"size": 14})},
    models.PositiveIntegerField: {"widget": forms.NumberInput(attrs={"style": "width: 5em"})},
}


class AliasInline(admin.TabularInline):
    model = Alias
    extra = 0
    fields = ["alias", "valid_from", "valid_to", "note", "source", "generic"]
    readonly_fields = ["generic"]  # through the AliasAdmin actions (rescans) or the book's files
    formfield_overrides = COMPACT_INPUTS


class StateChangeInline(admin.TabularInline):
    """Read-only history: changes are written through the StateChange admin (validated by the service)."""

    model = StateChange
    extra = 0
    fields = ["chapter", "seq", "field", "op", "old", "new", "reason", "confidence", "source"]
    readonly_fields = fields
    can_delete = True
    ordering = ["chapter", "seq", "id"]
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class RelationshipOutInline(admin.TabularInline):
    model = Relationship
    fk_name = "from_entity"
    extra = 0
    fields = ["type", "to_entity", "description", "chapter", "last_chapter"]
    readonly_fields = fields
    show_change_link = True
    verbose_name = "关系（本实体 → 对方）"
    verbose_name_plural = "关系（本实体 → 对方）"

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class RelationshipInInline(RelationshipOutInline):
    fk_name = "to_entity"
    fields = ["from_entity", "type", "description", "chapter", "last_chapter"]
    readonly_fields = fields
    verbose_name = "关系（对方 → 本实体）"
    verbose_name_plural = "关系（对方 → 本实体）"


class MergeForm(forms.Form):
    target = forms.CharField(label="保留的实体（id 或别名）", help_text="其余选中的实体并入它；它们的 id 成为别名")


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = [
        "canonical_name",
        "entity_id",
        "type",
        "tier",
        "is_protagonist",
        "first_appearance",
        "last_appearance",
        "book",
    ]
    list_filter = ["book", "type", "tier", "is_protagonist", "archived", SourceFilter]
    search_fields = ["entity_id", "canonical_name", "aliases__alias"]
    list_select_related = ["book"]
    show_full_result_count = False
    readonly_fields = ["current_state", "first_appearance", "last_appearance"]
    inlines = [AliasInline, StateChangeInline, RelationshipOutInline, RelationshipInInline]
    actions = ["merge_selected", "archive_selected", "unarchive_selected"]

    @admin.display(description="当前状态（重放）")
    def current_state(self, obj: Entity) -> dict:
        return selectors.entity_state_as_of(entity=obj) if obj.pk else {}

    @admin.action(description="合并选中的实体…")
    def merge_selected(self, request: HttpRequest, queryset: QuerySet[Entity]):
        if queryset.count() < 2 or queryset.values("book").distinct().count() != 1:
            self.message_user(request, "请选择同一本书的至少两个实体", messages.ERROR)
            return None
        form = MergeForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return _intermediate(
                self,
                request,
                queryset,
                form=form,
                title="合并实体",
                action="merge_selected",
                submit_label="合并",
                explanation="别名、出场、状态变更与关系都会移到保留的实体上。",
            )
        book = queryset.first().book
        try:
            target = selectors.entity_get(book=book, ref=form.cleaned_data["target"])
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        totals: dict[str, int] = {}
        merged = 0
        for source in queryset.exclude(pk=target.pk):
            for key, n in entity_merge(source=source, target=target).items():
                totals[key] = totals.get(key, 0) + n
            merged += 1
        detail = "，".join(f"{k} {v}" for k, v in totals.items())
        self.message_user(request, f"已将 {merged} 个实体并入 {target.entity_id}（{detail}）", messages.SUCCESS)
        return None

    @admin.action(description="归档选中的实体")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Entity]) -> None:
        count = entities_archive(entities=queryset, archived=True)
        self.message_user(request, f"已归档 {count} 个实体", messages.SUCCESS)

    @admin.action(description="取消归档选中的实体")
    def unarchive_selected(self, request: HttpRequest, queryset: QuerySet[Entity]) -> None:
        count = entities_archive(entities=queryset, archived=False)
        self.message_user(request, f"已取消归档 {count} 个实体", messages.SUCCESS)


@admin.register(Alias)
class AliasAdmin(admin.ModelAdmin):
    list_display = ["alias", "entity", "book", "valid_from", "valid_to", "note", "source", "generic"]
    list_filter = ["book", SourceFilter, "generic"]
    search_fields = ["alias", "entity__canonical_name", "entity__entity_id"]
    autocomplete_fields = ["entity"]
    list_select_related = ["entity", "book"]
    readonly_fields = ["generic"]
    show_full_result_count = False
    actions = ["mark_generic", "mark_plain"]

    def _generic_set(self, request: HttpRequest, queryset: QuerySet[Alias], generic: bool) -> None:
        result = aliases_generic_set(aliases=queryset, generic=generic)
        label = "泛称" if generic else "普通别名"
        self.message_user(request, f"已将 {result['changed']} 个别名标为{label}，并重新扫描提及", messages.SUCCESS)
        if result["file_owned"]:
            self.message_user(
                request,
                f"{result['file_owned']} 个别名来自书籍文件，未改动：请在 设定/名册.yaml 或角色卡中用 generic_aliases 标注",
                messages.WARNING,
            )

    @admin.action(description="标为泛称（弱提及，不计出场）")
    def mark_generic(self, request: HttpRequest, queryset: QuerySet[Alias]) -> None:
        self._generic_set(request, queryset, True)

    @admin.action(description="取消泛称")
    def mark_plain(self, request: HttpRequest, queryset: QuerySet[Alias]) -> None:
        self._generic_set(request, queryset, False)


class StateChangeForm(forms.ModelForm):
    class Meta:
        model = StateChange
        fields = ["entity", "chapter", "field", "op", "old", "new", "reason"]

    def clean(self):
        data = super().clean()
        if not self.errors and self.instance.pk is None:
            try:
                state_change_check(
                    entity=data["entity"],
                    chapter=data["chapter"],
                    field=data["field"],
                    op=data["op"],
                    new=data.get("new"),
                )
            except DomainError as exc:
                raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(StateChange)
class StateChangeAdmin(admin.ModelAdmin):
    """New changes are recorded through ``state_change_record`` (validated, ordered after the chapter's others)."""

    form = StateChangeForm
    list_display = ["entity", "chapter", "seq", "field", "op", "old", "new", "confidence", "source"]
    list_filter = ["book", "op", "source"]
    search_fields = ["entity__entity_id", "entity__canonical_name", "field", "reason"]
    autocomplete_fields = ["entity"]
    list_select_related = ["entity"]
    show_full_result_count = False
    ordering = ["entity", "chapter", "seq"]

    def save_model(self, request, obj: StateChange, form, change: bool) -> None:
        if change:
            obj.save()
            return
        try:
            saved = state_change_curate(
                entity=obj.entity,
                chapter=obj.chapter,
                field=obj.field,
                op=obj.op,
                new=obj.new,
                old=obj.old,
                reason=obj.reason,
            )
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from exc
        obj.pk = saved.pk


class RelationshipEventInline(admin.TabularInline):
    model = RelationshipEvent
    extra = 0
    fields = ["chapter", "description", "source"]


@admin.register(Relationship)
class RelationshipAdmin(admin.ModelAdmin):
    list_display = ["from_entity", "type", "to_entity", "description", "chapter", "last_chapter"]
    list_filter = ["book", "type"]
    search_fields = ["from_entity__canonical_name", "to_entity__canonical_name", "type", "description"]
    autocomplete_fields = ["from_entity", "to_entity"]
    list_select_related = ["from_entity", "to_entity"]
    readonly_fields = ["description", "chapter", "last_chapter"]
    show_full_result_count = False
    inlines = [RelationshipEventInline]

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        relationship_summary_refresh(relationship_pks=[form.instance.pk])


class ConfirmAsForm(forms.Form):
    entity = forms.CharField(
        label="实体（id 或别名）", help_text="新实体建议：作为该实体的别名；不确定提及：判给该实体"
    )


class SplitForm(forms.Form):
    aliases = forms.CharField(label="拆出的别名", help_text="用、或逗号分隔；第一个作为新提议的正名")


class NamedChangeList(ChangeList):
    """A change list that reads, in one query, the names of the entities its page of rows mentions
    (``row.entity_names``), so each row reads as a sentence with names instead of ids."""

    def get_results(self, request):
        super().get_results(request)
        rows = list(self.result_list)
        names = entity_names(
            book_ids={r.book_id for r in rows}, payloads=[self.model_admin.row_payload(r) for r in rows]
        )
        for row in rows:
            row.entity_names = names


@admin.register(PendingItem)
class PendingItemAdmin(admin.ModelAdmin):
    list_display = ["sentence", "confidence", "kind", "status", "book"]
    list_display_links = ["sentence"]
    list_filter = ["book", "status", "kind", SourceFilter]
    search_fields = ["note"]
    list_select_related = ["book"]
    ordering = ["status", "confidence", "chapter", "id"]
    fields = [
        "sentence",
        "book",
        "chapter",
        "kind",
        "confidence",
        "status",
        "note",
        "source",
        "payload",
        "resolution",
        "resolved_at",
    ]
    readonly_fields = [
        "sentence",
        "book",
        "chapter",
        "kind",
        "payload",
        "confidence",
        "status",
        "resolution",
        "source",
        "resolved_at",
    ]
    show_full_result_count = False
    actions = ["confirm_selected", "confirm_as", "reject_selected", "merge_discovered", "split_discovered"]

    def has_add_permission(self, request) -> bool:
        return False

    def get_changelist(self, request, **kwargs):
        return NamedChangeList

    @staticmethod
    def row_payload(obj: PendingItem) -> dict:
        return obj.payload if isinstance(obj.payload, dict) else {}

    @admin.display(description="待确认内容", ordering="chapter")
    def sentence(self, obj: PendingItem) -> str:
        names = getattr(obj, "entity_names", None)
        if names is None:  # the change page: one item
            names = entity_names(book_ids=[obj.book_id], payloads=[self.row_payload(obj)])
        return pending_sentence(obj, names)

    @admin.action(description="确认（按建议写入）")
    def confirm_selected(self, request: HttpRequest, queryset: QuerySet[PendingItem]) -> None:
        result = pending_items_bulk(items=queryset.order_by("confidence", "pk"), action="confirm")
        self._report(request, "确认", result)

    @admin.action(description="拒绝")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[PendingItem]) -> None:
        result = pending_items_bulk(items=queryset, action="reject")
        self._report(request, "拒绝", result)

    @admin.action(description="确认为指定实体…")
    def confirm_as(self, request: HttpRequest, queryset: QuerySet[PendingItem]):
        if queryset.values("book").distinct().count() != 1:
            self.message_user(request, "请选择同一本书的待确认项", messages.ERROR)
            return None
        form = ConfirmAsForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return _intermediate(
                self,
                request,
                queryset,
                form=form,
                title="确认为指定实体",
                action="confirm_as",
                submit_label="确认",
                explanation="选中的待确认项都会判给这个实体，然后写入。",
            )
        try:
            entity = selectors.entity_get(book=queryset.first().book, ref=form.cleaned_data["entity"])
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        result = pending_items_bulk(items=queryset, action="confirm", entity=entity)
        self._report(request, f"确认为 {entity.entity_id}", result)
        return None

    @admin.action(description="合并发现的实体（并入出现最多的一个）")
    def merge_discovered(self, request: HttpRequest, queryset: QuerySet[PendingItem]) -> None:
        try:
            result = discovery_merge(items=queryset)
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.message_user(
            request, f"已并入 #{result['pk']}「{result['name']}」：{len(result['merged'])} 项", messages.SUCCESS
        )

    @admin.action(description="拆分发现的实体…")
    def split_discovered(self, request: HttpRequest, queryset: QuerySet[PendingItem]):
        if queryset.count() != 1:
            self.message_user(request, "拆分时请只选择一个发现的实体", messages.ERROR)
            return None
        form = SplitForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return _intermediate(
                self,
                request,
                queryset,
                form=form,
                title="拆分发现的实体",
                action="split_discovered",
                submit_label="拆分",
                explanation="列出的别名从这个提议中移出，成为一个新的待确认提议。",
            )
        names = [n for n in re.split(r"[、,，\s]+", form.cleaned_data["aliases"]) if n]
        try:
            result = discovery_split(item=queryset.first(), aliases=names)
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        self.message_user(request, f"已拆出 #{result['new']}「{result['name']}」", messages.SUCCESS)
        return None

    def _report(self, request: HttpRequest, verb: str, result: dict) -> None:
        level = messages.SUCCESS if not result["failed"] else messages.WARNING
        text = f"{verb}：成功 {result['done']} 项，失败 {result['failed']} 项"
        if result["errors"]:
            text += "；" + "；".join(result["errors"][:5])
        self.message_user(request, text, level)


@admin.register(Extraction)
class ExtractionAdmin(admin.ModelAdmin):
    list_display = ["chapter", "book", "source", "warning_count", "updated_at"]
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
        "source",
    ]
    list_select_related = ["book"]
    show_full_result_count = False

    @admin.display(description="警告数")
    def warning_count(self, obj: Extraction) -> int:
        return len(obj.warnings)


@admin.register(Appearance)
class AppearanceAdmin(admin.ModelAdmin):
    list_display = ["entity", "chapter", "count", "first_offset", "source"]
    list_filter = ["book", "source"]
    search_fields = ["entity__entity_id", "entity__canonical_name"]
    list_select_related = ["entity"]
    show_full_result_count = False


@admin.register(AmbiguousMention)
class AmbiguousMentionAdmin(admin.ModelAdmin):
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
class TagApplicationAdmin(admin.ModelAdmin):
    list_display = ["chapter", "book", "applied_at"]
    list_filter = ["book"]
    readonly_fields = ["book", "chapter", "applied", "issues"]
    show_full_result_count = False


@admin.register(LegacyRecord)
class LegacyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "book", "updated_at"]
    list_filter = ["book"]
    search_fields = ["key"]
    readonly_fields = ["book", "key", "value", "source_path"]
    show_full_result_count = False
