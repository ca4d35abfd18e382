"""Admin of the entities app: entities with aliases, state history and relationships inline; the
pending queue (lowest confidence first) with confirm / confirm-as / reject; merge. Every write of a
curation action goes through ``entities.services`` and reports counts with ``message_user``."""

import re
from pathlib import Path

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from core.fileowned import FileOwnedAdmin
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
from entities.services.curation import (
    ENTITY_EDITABLE,
    alias_delete,
    alias_save,
    chapter_file_note,
    entity_add,
    entity_edit,
    entity_file_note,
    relationship_delete,
    relationship_key,
    relationship_save,
    state_change_delete,
    state_change_edit,
)
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_items_bulk
from entities.services.writes import entities_archive, state_change_check, state_change_curate
from entities.state_labels import state_change_sentence, state_labels, state_text
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


class FileAliasInline(admin.TabularInline):
    """The aliases the book's files give (the card or 名册): read-only, edited in the file."""

    model = Alias
    extra = 0
    fields = ["alias", "valid_from", "valid_to", "note", "generic"]
    readonly_fields = fields
    verbose_name = "别名（来自书籍文件，请在文件中修改）"
    verbose_name_plural = verbose_name

    def get_queryset(self, request):
        return super().get_queryset(request).filter(source="file")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class AliasInline(admin.TabularInline):
    """Aliases made by ingestion or curation: added, changed and removed through the journaled services
    (``EntityAdmin.save_formset``)."""

    model = Alias
    extra = 0
    fields = ["alias", "valid_from", "valid_to", "note", "source", "generic"]
    readonly_fields = ["source", "generic"]  # generic: through the AliasAdmin actions (rescans)
    formfield_overrides = COMPACT_INPUTS
    verbose_name = "别名（抽取或人工添加）"
    verbose_name_plural = verbose_name

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(source="file")


class StateChangeInline(admin.TabularInline):
    """Read-only history: changes are written through the StateChange admin (validated by the service)."""

    model = StateChange
    extra = 0
    fields = ["chapter", "sentence", "reason", "confidence", "source"]
    readonly_fields = fields
    can_delete = False  # through the StateChange admin (journaled; a chapter tag's change is the file's)
    ordering = ["chapter", "seq", "id"]
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="变更")
    def sentence(self, obj: StateChange) -> str:
        return state_change_sentence(field=obj.field, op=obj.op, new=obj.new, labels=state_labels(book=obj.book))


class RelationshipOutInline(admin.TabularInline):
    model = Relationship
    fk_name = "from_entity"
    extra = 0
    fields = ["type", "to_entity", "description", "chapter", "last_chapter"]
    readonly_fields = fields
    can_delete = False  # through the Relationship admin (journaled)
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


class EntityForm(forms.ModelForm):
    class Meta:
        model = Entity
        fields = ["book", "entity_id", "type", "canonical_name", "tier", "description", "base_state",
                  "is_protagonist", "archived"]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "entity_id" in self.fields:
            self.fields["entity_id"].required = False
            self.fields["entity_id"].help_text = "留空则按正名生成拼音 id"

    def clean_entity_id(self):
        value = (self.cleaned_data.get("entity_id") or "").strip()
        if value and Entity.objects.filter(book=self.cleaned_data.get("book"), entity_id=value).exists():
            raise forms.ValidationError(f"实体 id '{value}' 已存在")
        return value

    def validate_unique(self):
        pass  # an empty id is generated by entity_add; a given one is checked above

    def clean_canonical_name(self):
        name = (self.cleaned_data.get("canonical_name") or "").strip()
        if not name:
            raise forms.ValidationError("实体正名不能为空")
        return name

    def clean_base_state(self):
        state = self.cleaned_data.get("base_state")
        if state is not None and not isinstance(state, dict):
            raise forms.ValidationError('初始状态应是 JSON 对象，如 {"境界": "炼气"}')
        return state or {}


@admin.register(Entity)
class EntityAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """A card's or the roster's entity is read-only here (its file owns every field but the curator's
    archive mark); an entity made by ingestion or curation is edited through ``entity_edit``, journaled."""

    form = EntityForm
    file_owned_fields = ("book", "entity_id", "type", "canonical_name", "tier", "description", "base_state",
                         "is_protagonist")  # fmt: skip
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
    inlines = [FileAliasInline, AliasInline, StateChangeInline, RelationshipOutInline, RelationshipInInline]
    actions = ["merge_selected", "archive_selected", "unarchive_selected"]

    def file_origin(self, obj: Entity) -> str | None:
        return entity_file_note(obj) if obj.source == "file" else None

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None:
            fields += [f for f in ("book", "entity_id", "source") if f not in fields]  # the journal names rows by id
        if "base_state" in fields:
            fields.append("base_state_text")
        return fields

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if "base_state" in self.get_readonly_fields(request, obj):  # read-only: shown as text, not JSON
            fields = ["base_state_text" if f == "base_state" else f for f in fields if f != "base_state_text"]
        return fields

    @admin.display(description="初始状态")
    def base_state_text(self, obj: Entity) -> str:
        return state_text(obj.base_state or {}, state_labels(book=obj.book))

    def has_delete_permission(self, request, obj=None) -> bool:
        # a card's entity comes back with the next sync, and a deleted curated one with the next rebuild
        # (its journal still creates it): archive it instead (journaled), or merge it into another
        return False

    def save_model(self, request, obj: Entity, form, change: bool) -> None:
        data = form.cleaned_data
        if not change:
            entity = entity_add(
                book=data["book"],
                name=data["canonical_name"],
                type=data["type"],
                tier=data["tier"],
                description=data.get("description") or "",
                base_state=data.get("base_state") or {},
                is_protagonist=bool(data.get("is_protagonist")),
                entity_id=data.get("entity_id") or None,
            )
            obj.pk, obj.entity_id, obj.source = entity.pk, entity.entity_id, entity.source
            obj._state.adding = False
            obj._state.db = entity._state.db
        elif obj.source != "file":
            changes = {name: data[name] for name in ENTITY_EDITABLE if name in form.changed_data}
            if changes:
                entity_edit(entity=obj, changes=changes)
        if "archived" in form.changed_data or (not change and data.get("archived")):
            entities_archive(entities=[obj], archived=bool(data.get("archived")))

    def save_formset(self, request, form, formset, change) -> None:
        if formset.model is not Alias:
            formset.save()
            return
        entity = form.instance
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []  # the change message
        for alias_form in formset.forms:
            row = alias_form.instance
            if alias_form in formset.deleted_forms:
                if row.pk is not None:
                    alias_delete(alias=Alias.objects.get(pk=row.pk))
                continue
            if not alias_form.has_changed() or not alias_form.cleaned_data:
                continue
            data = alias_form.cleaned_data
            try:
                alias_save(
                    entity=entity,
                    alias=data["alias"],
                    valid_from=data.get("valid_from"),
                    valid_to=data.get("valid_to"),
                    note=data.get("note") or "",
                    previous=alias_form.initial.get("alias") if row.pk is not None else None,
                )
            except DomainError as exc:
                self.message_user(request, exc.message, messages.ERROR)

    @admin.display(description="当前状态（重放）")
    def current_state(self, obj: Entity) -> str:
        return state_text(selectors.entity_state_as_of(entity=obj), state_labels(book=obj.book)) if obj.pk else "—"

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


class AliasForm(forms.ModelForm):
    class Meta:
        model = Alias
        fields = ["entity", "alias", "valid_from", "valid_to", "note"]

    def clean(self):
        data = super().clean()
        entity, text = data.get("entity") or getattr(self.instance, "entity", None), (data.get("alias") or "").strip()
        if entity is not None and text and text == entity.canonical_name:
            raise forms.ValidationError(f"'{text}' 是实体的正名，不必再作别名")
        start, end = data.get("valid_from"), data.get("valid_to")
        if start is not None and end is not None and start > end:
            raise forms.ValidationError(f"有效区间无效：起章 {start} 晚于止章 {end}")
        return data


@admin.register(Alias)
class AliasAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """An alias from the book's files is read-only (its card or 名册 owns it); the others are added,
    changed and removed through ``alias_save`` / ``alias_delete`` (journaled, the book rescanned)."""

    form = AliasForm
    list_display = ["alias", "entity", "book", "valid_from", "valid_to", "note", "source", "generic"]
    list_filter = ["book", SourceFilter, "generic"]
    search_fields = ["alias", "entity__canonical_name", "entity__entity_id"]
    autocomplete_fields = ["entity"]
    list_select_related = ["entity", "book"]
    readonly_fields = ["generic", "source"]
    show_full_result_count = False
    actions = ["mark_generic", "mark_plain"]

    def file_origin(self, obj: Alias) -> str | None:
        return entity_file_note(obj.entity) if obj.source == "file" else None

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and "entity" not in fields:
            fields.append("entity")
        return fields

    def save_model(self, request, obj: Alias, form, change: bool) -> None:
        data = form.cleaned_data
        entity = obj.entity if change else data["entity"]
        row = alias_save(
            entity=entity,
            alias=data["alias"],
            valid_from=data.get("valid_from"),
            valid_to=data.get("valid_to"),
            note=data.get("note") or "",
            previous=form.initial.get("alias") if change else None,
        )
        obj.pk, obj.book_id, obj.source = row.pk, row.book_id, row.source
        obj._state.adding = False
        obj._state.db = row._state.db

    def delete_model(self, request, obj: Alias) -> None:
        alias_delete(alias=obj)

    def delete_queryset(self, request, queryset) -> None:
        for row in queryset.exclude(source="file").select_related("entity"):
            alias_delete(alias=row)

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
        if not self.errors:
            try:
                state_change_check(
                    entity=data.get("entity") or self.instance.entity,
                    chapter=data["chapter"],
                    field=data["field"],
                    op=data["op"],
                    new=data.get("new"),
                )
            except DomainError as exc:
                raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(StateChange)
class StateChangeAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """New changes are recorded through ``state_change_curate`` (validated, ordered after the chapter's
    others), edits and deletions through ``state_change_edit`` / ``state_change_delete``, all journaled;
    a change a chapter's tag made is that file's (read-only)."""

    form = StateChangeForm
    list_display = ["entity", "chapter", "seq", "field", "op", "old", "new", "confidence", "source"]
    list_filter = ["book", "op", "source"]
    search_fields = ["entity__entity_id", "entity__canonical_name", "field", "reason"]
    autocomplete_fields = ["entity"]
    list_select_related = ["entity"]
    show_full_result_count = False
    ordering = ["entity", "chapter", "seq"]

    def file_origin(self, obj: StateChange) -> str | None:
        if obj.source != StateChange.Source.TAG:
            return None
        return chapter_file_note(book_id=obj.book_id, chapter=obj.chapter)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and "entity" not in fields:
            fields.append("entity")
        return fields

    def delete_model(self, request, obj: StateChange) -> None:
        state_change_delete(change=obj)

    def delete_queryset(self, request, queryset) -> None:
        for row in queryset.exclude(source=StateChange.Source.TAG).select_related("entity"):
            state_change_delete(change=row)

    def save_model(self, request, obj: StateChange, form, change: bool) -> None:
        if change:
            data = form.cleaned_data
            state_change_edit(
                change=StateChange.objects.get(pk=obj.pk),
                chapter=data["chapter"],
                field=data["field"],
                op=data["op"],
                new=data.get("new"),
                old=data.get("old"),
                reason=data.get("reason") or "",
            )
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


class RelationshipEventFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        kept = [
            f
            for f in self.forms
            if getattr(f, "cleaned_data", None) and f not in self.deleted_forms and (f.instance.pk or f.has_changed())
        ]
        if not any(self.errors) and not kept:
            raise forms.ValidationError("关系至少要有一条事件（章节与描述）")


class RelationshipEventInline(admin.TabularInline):
    model = RelationshipEvent
    formset = RelationshipEventFormSet
    extra = 1
    fields = ["chapter", "description", "source"]
    readonly_fields = ["source"]  # new events are a curator's; an agent's stay the agent's


class RelationshipForm(forms.ModelForm):
    class Meta:
        model = Relationship
        fields = ["book", "from_entity", "to_entity", "type"]

    def clean(self):
        data = super().clean()
        book, src, dst = (
            data.get("book") or getattr(self.instance, "book", None),
            data.get("from_entity"),
            data.get("to_entity"),
        )
        if book is not None and src is not None and dst is not None:
            if src.book_id != book.pk or dst.book_id != book.pk:
                raise forms.ValidationError("关系两端必须属于这本书")
            clash = Relationship.objects.filter(from_entity=src, to_entity=dst, type=(data.get("type") or "").strip())
            if clash.exclude(pk=self.instance.pk).exists():
                raise forms.ValidationError("这条关系已存在，请修改那一条")
        return data


@admin.register(Relationship)
class RelationshipAdmin(FileOwnedAdmin, admin.ModelAdmin):
    """Saved through ``relationship_save`` (its ends, type and every event at once, journaled); one that
    holds a chapter tag's event is that file's (read-only)."""

    form = RelationshipForm
    list_display = ["from_entity", "type", "to_entity", "description", "chapter", "last_chapter"]
    list_filter = ["book", "type"]
    search_fields = ["from_entity__canonical_name", "to_entity__canonical_name", "type", "description"]
    autocomplete_fields = ["from_entity", "to_entity"]
    list_select_related = ["from_entity", "to_entity"]
    readonly_fields = ["description", "chapter", "last_chapter"]
    show_full_result_count = False
    inlines = [RelationshipEventInline]

    def file_origin(self, obj: Relationship) -> str | None:
        chapter = obj.events.filter(source=RelationshipEvent.Source.TAG).values_list("chapter", flat=True).first()
        if chapter is None and not obj.events.filter(source=RelationshipEvent.Source.TAG).exists():
            return None
        return chapter_file_note(book_id=obj.book_id, chapter=chapter or 0, what="实体标签")

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and "book" not in fields:
            fields.append("book")
        return fields

    def save_model(self, request, obj: Relationship, form, change: bool) -> None:
        # written with its events in save_related (one journaled service call)
        request._relationship_key = (
            relationship_key(relationship=Relationship.objects.get(pk=obj.pk)) if change else None
        )

    def save_related(self, request, form, formsets, change) -> None:
        (events_formset,) = formsets
        events_formset.new_objects, events_formset.changed_objects, events_formset.deleted_objects = [], [], []
        events = []
        for f in events_formset.forms:
            if not getattr(f, "cleaned_data", None) or f in events_formset.deleted_forms:
                continue
            if f.instance.pk is None and not f.has_changed():
                continue
            source = f.instance.source if f.instance.pk is not None else RelationshipEvent.Source.CURATION
            events.append(
                {"chapter": f.cleaned_data.get("chapter"), "description": f.cleaned_data.get("description") or "",
                 "source": source}
            )  # fmt: skip
        obj = form.instance
        rel = relationship_save(
            book=obj.book if change else form.cleaned_data["book"],
            key=request._relationship_key,
            from_entity=form.cleaned_data["from_entity"],
            to_entity=form.cleaned_data["to_entity"],
            type=form.cleaned_data["type"],
            events=events,
        )
        obj.pk = rel.pk
        obj._state.adding = False
        obj._state.db = rel._state.db

    def delete_model(self, request, obj: Relationship) -> None:
        relationship_delete(relationship=obj)

    def delete_queryset(self, request, queryset) -> None:
        for rel in queryset.select_related("from_entity", "to_entity", "book"):
            if self.file_origin(rel) is None:
                relationship_delete(relationship=rel)


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
        "note",  # decided through the actions (journaled), never edited in place
        "resolution",
        "source",
        "resolved_at",
    ]
    show_full_result_count = False
    actions = ["confirm_selected", "confirm_as", "reject_selected", "merge_discovered", "split_discovered"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # an item is decided (confirm / reject, journaled); its extraction would queue it again

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
class ExtractionAdmin(FileOwnedAdmin, admin.ModelAdmin):
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
        return chapter_file_note(book_id=obj.book_id, chapter=obj.chapter, what="正文（扫描提及与实体标签）")

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
        return chapter_file_note(book_id=obj.book_id, chapter=obj.chapter)

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(LegacyRecord)
class LegacyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "book", "updated_at"]
    list_filter = ["book"]
    search_fields = ["key"]
    readonly_fields = ["book", "key", "value", "source_path"]
    show_full_result_count = False
