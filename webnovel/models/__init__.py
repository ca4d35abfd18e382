from webnovel.models.apikey import ApiKey
from webnovel.models.book import Book, SourceFile, Volume
from webnovel.models.chapter import Chapter, Fingerprint
from webnovel.models.documents import Document, Section, TimelineRow

__all__ = [
    "ApiKey",
    "Book",
    "Chapter",
    "Document",
    "Fingerprint",
    "Section",
    "SourceFile",
    "TimelineRow",
    "Volume",
]
