from django.apps import AppConfig


class BookfilesConfig(AppConfig):
    """The book folder: parse it (``bookfiles.parser``, pure, no Django), rebuild / sync / finalize it into
    the tables, import a .txt novel or an old project. It orchestrates and calls each app's writers."""

    name = "bookfiles"
    verbose_name = "书籍文件"

    def ready(self) -> None:
        # The lazy build on first query (core/lazybuild.py): the core cannot import the rebuilder. Our own
        # dotted path, not the function: importing the rebuilder here would cost every process ~0.3 s.
        from core.lazybuild import book_rebuilder_register

        book_rebuilder_register("bookfiles.rebuilder.book_rebuild")
