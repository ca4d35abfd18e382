from core.models.apikey import ApiKey
from core.models.book import Book, SourceFile, Volume
from core.models.chapter import Chapter, Fingerprint
from core.models.documents import Document, Section, TimelineRow

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
