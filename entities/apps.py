from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "entities"
    verbose_name = "实体"
