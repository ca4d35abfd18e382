"""The book-files app's settings, read in one place and handed to the pure parser as ``ReadLimits``."""

from django.conf import settings

from bookfiles.parser import ReadLimits


def read_limits() -> ReadLimits:
    """How big a book file may be (``WEBNOVEL_FILE_MAX_BYTES``) and whether symlinks may leave the book
    folder (``WEBNOVEL_BOOK_LINKS_OUTSIDE``), from the settings."""
    return ReadLimits(max_bytes=settings.WEBNOVEL_FILE_MAX_BYTES, links_outside=settings.WEBNOVEL_BOOK_LINKS_OUTSIDE)
