from django.apps import AppConfig


class StorysystemConfig(AppConfig):
    name = "storysystem"
    verbose_name = "故事系统"

    def ready(self) -> None:
        from storysystem import signals  # noqa: F401
