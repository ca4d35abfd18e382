from django.apps import AppConfig


def _matcher_invalidate(sender, instance, **kwargs) -> None:
    from entities.mentions import matcher_invalidate

    matcher_invalidate(book_id=instance.book_id)


class EntitiesConfig(AppConfig):
    name = "entities"
    verbose_name = "实体"

    def ready(self) -> None:
        # Signals only invalidate the cached alias automaton (never domain flow).
        from django.db.models.signals import post_delete, post_save

        from entities.models import Alias, Entity

        for model in (Entity, Alias):
            post_save.connect(_matcher_invalidate, sender=model, dispatch_uid=f"matcher_{model.__name__}_save")
            post_delete.connect(_matcher_invalidate, sender=model, dispatch_uid=f"matcher_{model.__name__}_delete")
