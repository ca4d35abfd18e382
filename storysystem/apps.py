from django.apps import AppConfig


class StorysystemConfig(AppConfig):
    name = "storysystem"
    verbose_name = "故事系统"

    def ready(self) -> None:
        from kernel.journal_ops import journal_ops_register
        from storysystem import signals  # noqa: F401

        journal_ops_register("storysystem.journal_ops")  # the setting's save and its replayer, imported on first replay
