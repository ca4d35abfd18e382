"""The pending queue (lowest confidence first) with confirm / confirm-as / reject, and the merge and
split of discovered entities."""

import re

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest

from entities import selectors
from entities.admin.common import SourceFilter, SourceNamed, action_form_page
from entities.discovery.services import discovery_merge, discovery_split
from entities.models import PendingItem
from entities.pending_text import entity_names, pending_sentence
from entities.services.pending import pending_items_bulk
from kernel.exceptions import DomainError


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
class PendingItemAdmin(SourceNamed, admin.ModelAdmin):
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
        "source_name",
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
        "source_name",
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
            return action_form_page(
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
            return action_form_page(
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
