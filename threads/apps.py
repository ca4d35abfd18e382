from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    verbose_name = "线索与信息差"
