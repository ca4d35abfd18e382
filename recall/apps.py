from django.apps import AppConfig


class RecallConfig(AppConfig):
    name = "recall"
    verbose_name = "语义检索"

    def ready(self) -> None:
        from kernel.indexing import after_chapter_hook_register
        from kernel.recall import semantic_register
        from recall import search

        # The core's `search` read and the memory app's recall ask the kernel for the semantic side:
        # the core sits below this app and cannot import it.
        semantic_register(search.PROVIDER)
        # the new chapter's windows embedded after its commit, before the memory hook (an app installed
        # after this one) so memory's hybrid recall finds them
        after_chapter_hook_register("recall.pipeline.recall_after_chapter")
