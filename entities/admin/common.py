"""What the entities admin's pages share: the 来源 filter and label, the intermediate action form,
the compact inline inputs."""

from django import forms
from django.contrib import admin
from django.db import models
from django.template.response import TemplateResponse

from entities.pending_text import SOURCE_NAMES


class SourceFilter(admin.SimpleListFilter):
    """The ``source`` column (a plain string: file, extraction, migration …) filtered under Chinese names."""

    title = "来源"
    parameter_name = "source"

    def lookups(self, request, model_admin):
        values = model_admin.get_queryset(request).order_by().values_list("source", flat=True).distinct()
        return [(v, SOURCE_NAMES.get(v, v)) for v in sorted(set(values))]

    def queryset(self, request, queryset):
        return queryset.filter(source=self.value()) if self.value() else queryset


def action_form_page(modeladmin, request, queryset, *, form, title, explanation, action, submit_label):
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


class SourceNamed:
    """A ModelAdmin or inline that shows the plain-string ``source`` column (file, extraction,
    migration, admin …) in the authors' words as ``source_name``; a value with no name shows as it is."""

    @admin.display(description="来源", ordering="source")
    def source_name(self, obj) -> str:
        return SOURCE_NAMES.get(obj.source, obj.source) if obj.source else "—"
