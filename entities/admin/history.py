"""State changes and relationships, each written through its journaled service."""

from django import forms
from django.contrib import admin

from core.fileowned import FileOwnedAdmin
from entities.models import Relationship, RelationshipEvent, StateChange
from entities.services.curation import (
    DECLARED_SOURCES,
    chapter_file_note,
    declared_change_note,
    relationship_delete,
    relationship_key,
    relationship_save,
    state_change_delete,
    state_change_edit,
)
from entities.services.writes import state_change_check, state_change_curate
from kernel.exceptions import DomainError


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
                    number=data["chapter"],
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
        if obj.source in DECLARED_SOURCES:  # issue 27: a card's changes or a timeline row's 状态变化
            return declared_change_note(obj)
        if obj.source != StateChange.Source.TAG:
            return None
        return chapter_file_note(book_id=obj.book_id, number=obj.chapter)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and "entity" not in fields:
            fields.append("entity")
        return fields

    def delete_model(self, request, obj: StateChange) -> None:
        state_change_delete(change=obj)

    def delete_queryset(self, request, queryset) -> None:
        for row in queryset.exclude(source__in=(StateChange.Source.TAG, *DECLARED_SOURCES)).select_related("entity"):
            state_change_delete(change=row)

    def save_model(self, request, obj: StateChange, form, change: bool) -> None:
        if change:
            data = form.cleaned_data
            state_change_edit(
                change=StateChange.objects.get(pk=obj.pk),
                number=data["chapter"],
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
                number=obj.chapter,
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
        return chapter_file_note(book_id=obj.book_id, number=chapter or 0, what="实体标签")

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
