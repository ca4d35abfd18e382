from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The core domain: books, chapters, volumes, outlines, timelines, fingerprints, search, API keys.

    The label stays ``webnovel`` (the package was ``webnovel/`` before the project configuration took
    that name), so its tables, migrations, content types and permissions keep their names."""

    name = "core"
    label = "webnovel"
    verbose_name = "书籍（核心）"

    def ready(self) -> None:
        from kernel.indexing import chapter_indexer_register, follow_up_store_register

        chapter_indexer_register("core.search.search_index_update")  # the line search index, in the transaction
        # after-commit hooks recorded in the write's transaction, completed by the next sync if a writer dies
        follow_up_store_register(add="core.followups.follow_up_add", done="core.followups.follow_up_done")
