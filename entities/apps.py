from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "entities"
    verbose_name = "实体"

    def ready(self) -> None:
        from kernel.indexing import chapter_indexer_register
        from kernel.journal_ops import journal_ops_register

        # The journaled writes and their replayers, by our own dotted path: the module imports the
        # services (ingestion, curation), which a plain read's django.setup() should not pay for.
        journal_ops_register("entities.journal_ops")
        chapter_indexer_register("entities.mentions.mentions_index")  # the mention scan, after the search index
        # Signals only invalidate the cached alias automaton (never domain flow). Imported here: the
        # receivers' module loads models, which must wait for the app registry.
        from django.db.models.signals import post_delete, post_save

        from entities.models import Alias, Entity
        from entities.signals import alias_names_changed

        for model in (Entity, Alias):
            post_save.connect(alias_names_changed, sender=model, dispatch_uid=f"matcher_{model.__name__}_save")
            post_delete.connect(alias_names_changed, sender=model, dispatch_uid=f"matcher_{model.__name__}_delete")
