from django.apps import AppConfig


class BookfilesConfig(AppConfig):
    """The book folder: parse it (``bookfiles.parser``, pure, no Django), rebuild / sync / finalize it into
    the tables, import a .txt novel or an old project. It orchestrates and calls each app's writers."""

    name = "bookfiles"
    verbose_name = "书籍文件"

    def ready(self) -> None:
        # The lazy build on first query (core/lazybuild.py): the core cannot import the rebuilder. Our own
        # dotted path, not the function: importing the rebuilder here would cost every process ~0.3 s.
        from core.journal import journal_healer_register
        from core.lazybuild import book_files_rereader_register, book_rebuilder_register

        book_rebuilder_register("bookfiles.rebuilder.book_rebuild")
        # a lower app's write of an author's file (a confirmed discovery's roster entry) loaded at once
        book_files_rereader_register("bookfiles.rebuilder.incremental.book_files_reread")
        # A journaling writer first applies the events a crashed writer left (core/journal.py): the core
        # cannot import the replay, so it is registered here, by path for the same reason.
        journal_healer_register("bookfiles.rebuilder.journal_replay.journal_heal_apply")
