from django.apps import AppConfig


class ContinuityConfig(AppConfig):
    """The continuity check (机检): a draft against the canon as of the chapter before it."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "continuity"
    verbose_name = "机检"
