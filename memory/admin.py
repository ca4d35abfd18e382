from django.contrib import admin, messages

from kernel.exceptions import DomainError
from memory.models import EVENT_LABELS, Chunk, DerivationStamp, Fact, FactEvent, FactTombstone, MemoryHit
from memory.services import fact_close, fact_decide

# Plain-string columns written by code, shown in the authors' words (display only: no choices on the
# model, so no migration; an unknown value shows as it is).
TASK_LABELS = {"write": "写作", "review": "审阅", "query": "查询"}
MODE_LABELS = {"full": "完整", "simple": "简易（不用记忆）"}
TOMBSTONE_LABELS = {"merged": "合并重复", "dropped": "推导已删除"}
STATUS_LABELS = dict(Fact.Status.choices)


def _label(labels: dict[str, str], value: str) -> str:
    return labels.get(value, value) if value else "—"


def labelled_filter(field: str, title: str, labels: dict[str, str]) -> type[admin.SimpleListFilter]:
    """A list filter over a plain-string column whose options read as ``labels`` (values not in
    ``labels`` are listed as they are)."""

    class Filter(admin.SimpleListFilter):
        parameter_name = field

        def lookups(self, request, model_admin):
            values = model_admin.get_queryset(request).order_by(field).values_list(field, flat=True).distinct()
            return [(v, _label(labels, v)) for v in values]

        def queryset(self, request, queryset):
            return queryset.filter(**{field: self.value()}) if self.value() is not None else queryset

    Filter.title = title
    Filter.__name__ = f"{field.title()}Filter"
    return Filter


class FactEventInline(admin.TabularInline):
    model = FactEvent
    extra = 0
    can_delete = False
    fields = ["at", "action_name", "old_status_name", "new_status_name", "chapter", "note"]
    readonly_fields = fields

    @admin.display(description="动作")
    def action_name(self, obj: FactEvent) -> str:
        return _label(EVENT_LABELS, obj.action)

    @admin.display(description="原状态")
    def old_status_name(self, obj: FactEvent) -> str:
        return _label(STATUS_LABELS, obj.old_status)

    @admin.display(description="新状态")
    def new_status_name(self, obj: FactEvent) -> str:
        return _label(STATUS_LABELS, obj.new_status)

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = [
        "subject",
        "field",
        "value_short",
        "category",
        "status",
        "source_chapter",
        "confidence",
        "origin",
        "book",
    ]
    list_filter = ["book", "status", "category", "origin"]
    search_fields = ["key", "subject", "field", "value"]
    list_select_related = ["book"]
    show_full_result_count = False
    ordering = ["book", "category", "subject", "field", "source_chapter", "key"]
    readonly_fields = [
        "key",
        "status",
        "superseded_by",
        "revises",
        "closed_chapter",
        "decided_at",
        "origin",
        "created_at",
        "updated_at",
    ]
    raw_id_fields = ["superseded_by", "revises"]
    inlines = [FactEventInline]
    actions = ["decide", "outdate"]

    @admin.display(description="值")
    def value_short(self, obj: Fact) -> str:
        return obj.value if len(obj.value) <= 40 else obj.value[:39] + "…"

    @admin.action(description="裁决矛盾：采纳所选事实的值")
    def decide(self, request, queryset):
        done = 0
        for fact in queryset.order_by("pk"):
            try:
                fact_decide(fact=fact, note=f"后台裁决（{request.user}）")
                done += 1
            except DomainError as exc:
                self.message_user(request, exc.message, level=messages.WARNING)
        if done:
            self.message_user(request, f"已裁决 {done} 条事实", level=messages.SUCCESS)

    @admin.action(description="标为过时：所选事实自本书最新一章起不再成立")
    def outdate(self, request, queryset):
        done = 0
        for fact in queryset.select_related("book").order_by("pk"):
            if fact.status == Fact.Status.OUTDATED:
                continue
            latest = fact.book.chapters.order_by("-number").values_list("number", flat=True).first() or 0
            try:
                fact_close(fact=fact, number=max(latest, fact.source_chapter), reason=f"后台标为过时（{request.user}）")
                done += 1
            except DomainError as exc:
                self.message_user(request, exc.message, level=messages.WARNING)
        if done:
            self.message_user(request, f"已将 {done} 条事实标为过时", level=messages.SUCCESS)

    def has_change_permission(self, request, obj=None):
        # Statuses are the resolver's: edits go through services (actions, API), never the form.
        return False

    def has_delete_permission(self, request, obj=None):
        # A fact is never deleted in place: hand-made and imported ones live in the book's journal (a
        # rebuild would bring them back), derived ones are recomputed from the chapters. 标为过时 closes
        # one through the journaled service instead.
        return False

    def has_add_permission(self, request):
        return False


@admin.register(MemoryHit)
class MemoryHitAdmin(admin.ModelAdmin):
    list_display = [
        "book",
        "chapter",
        "task_name",
        "mode_name",
        "used_tokens",
        "budget_tokens",
        "skipped",
        "retrieval",
        "built_at",
    ]
    list_filter = ["book", labelled_filter("task", "任务", TASK_LABELS), labelled_filter("mode", "模式", MODE_LABELS)]
    search_fields = ["items"]
    list_select_related = ["book"]
    show_full_result_count = False
    readonly_fields = [
        "book",
        "chapter",
        "task_name",
        "mode_name",
        "budget_tokens",
        "used_tokens",
        "retrieval",
        "items",
        "skipped",
        "built_at",
        "facts",
    ]

    @admin.display(description="任务", ordering="task")
    def task_name(self, obj: MemoryHit) -> str:
        return _label(TASK_LABELS, obj.task)

    @admin.display(description="模式", ordering="mode")
    def mode_name(self, obj: MemoryHit) -> str:
        return _label(MODE_LABELS, obj.mode)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # a log: written by the context front doors only


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["book", "chapter", "kind", "order"]
    list_filter = ["book", "kind"]
    search_fields = ["text"]
    list_select_related = ["book"]
    show_full_result_count = False
    readonly_fields = ["book", "chapter", "kind", "order", "text", "terms", "source_hash"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(FactTombstone)
class FactTombstoneAdmin(admin.ModelAdmin):
    list_display = ["key", "reason_name", "book", "at"]
    list_filter = ["book", labelled_filter("reason", "原因", TOMBSTONE_LABELS)]
    search_fields = ["key"]
    list_select_related = ["book"]
    show_full_result_count = False

    @admin.display(description="原因", ordering="reason")
    def reason_name(self, obj: FactTombstone) -> str:
        return _label(TOMBSTONE_LABELS, obj.reason)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DerivationStamp)
class DerivationStampAdmin(admin.ModelAdmin):
    """Read-only: deleting a stamp is safe (the next derivation recomputes the book-wide facts, and the
    next chunk indexing remakes every chunk once)."""

    list_display = ["book", "inputs", "facts"]
    list_select_related = ["book"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
