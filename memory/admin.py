from django.contrib import admin, messages

from kernel.exceptions import DomainError
from memory.models import Chunk, DerivationStamp, Fact, FactEvent, FactTombstone, MemoryHit
from memory.services import fact_decide


class FactEventInline(admin.TabularInline):
    model = FactEvent
    extra = 0
    can_delete = False
    fields = ["at", "action", "old_status", "new_status", "chapter", "note"]
    readonly_fields = fields

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
    actions = ["decide"]

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

    def has_change_permission(self, request, obj=None):
        # Statuses are the resolver's: edits go through services (actions, API), never the form.
        return False

    def has_add_permission(self, request):
        return False


@admin.register(MemoryHit)
class MemoryHitAdmin(admin.ModelAdmin):
    list_display = [
        "book",
        "chapter",
        "task",
        "mode",
        "used_tokens",
        "budget_tokens",
        "skipped",
        "retrieval",
        "built_at",
    ]
    list_filter = ["book", "task", "mode"]
    search_fields = ["items"]
    list_select_related = ["book"]
    show_full_result_count = False
    readonly_fields = [
        "book",
        "chapter",
        "task",
        "mode",
        "budget_tokens",
        "used_tokens",
        "retrieval",
        "items",
        "skipped",
        "built_at",
        "facts",
    ]

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
    list_display = ["key", "reason", "book", "at"]
    list_filter = ["book", "reason"]
    search_fields = ["key"]
    list_select_related = ["book"]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DerivationStamp)
class DerivationStampAdmin(admin.ModelAdmin):
    """Read-only: deleting a stamp is safe (the next derivation recomputes the book-wide facts)."""

    list_display = ["book", "inputs", "facts"]
    list_select_related = ["book"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
