from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The core domain: books, chapters, volumes, outlines, timelines, fingerprints, search, API keys.

    The label stays ``webnovel`` (the package was ``webnovel/`` before the project configuration took
    that name), so its tables, migrations, content types and permissions keep their names."""

    name = "core"
    label = "webnovel"
    verbose_name = "书籍（核心）"

    def ready(self) -> None:
        from kernel.indexing import chapter_indexer_register

        chapter_indexer_register("core.search.search_index_update")  # the line search index, in the transaction
