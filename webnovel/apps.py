from django.apps import AppConfig


class WebnovelConfig(AppConfig):
    name = "webnovel"
    verbose_name = "书籍（核心）"
