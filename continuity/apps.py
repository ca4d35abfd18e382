from django.apps import AppConfig


class ContinuityConfig(AppConfig):
    """The continuity check (机检): a draft against the canon as of the chapter before it."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "continuity"
    verbose_name = "机检"

    def ready(self) -> None:
        from kernel.indexing import canon_change_reporter_register

        # what a finalize / sync did to the other chapters: the findings they have now, not before
        canon_change_reporter_register("continuity.retcon.canon_change_report")
