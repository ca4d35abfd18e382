from django.contrib import admin

from entities.models import Alias, Entity


class AliasInline(admin.TabularInline):
    model = Alias
    extra = 0
    fields = ["alias", "valid_from", "valid_to", "note", "source"]


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["book", "entity_id", "canonical_name", "type", "tier", "is_protagonist", "archived"]
    list_filter = ["book", "type", "tier", "is_protagonist", "archived"]
    search_fields = ["entity_id", "canonical_name", "aliases__alias"]
    list_select_related = ["book"]
    show_full_result_count = False
    inlines = [AliasInline]


@admin.register(Alias)
class AliasAdmin(admin.ModelAdmin):
    list_display = ["alias", "entity", "book", "valid_from", "valid_to"]
    list_filter = ["book"]
    search_fields = ["alias", "entity__canonical_name"]
    autocomplete_fields = ["entity"]
    list_select_related = ["entity", "book"]
    show_full_result_count = False
