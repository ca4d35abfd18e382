"""The rebuilder: book folder → database, in one transaction.

Written here rather than taken from a library because it is the product: it decides what survives a
rebuild (curated entities), what a partial update touches (finalize / sync), and that two rebuilds
produce byte-identical data (``book_dump``).
"""

from bookfiles.rebuilder.dump import book_dump
from bookfiles.rebuilder.incremental import book_sync, chapter_finalize
from bookfiles.rebuilder.rebuild import book_rebuild

__all__ = ["book_dump", "book_rebuild", "book_sync", "chapter_finalize"]
