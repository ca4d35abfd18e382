from core.models.apikey import ApiKey
from core.models.book import Book, SourceFile, Volume
from core.models.chapter import Chapter, Fingerprint
from core.models.documents import Document, Section, TimelineRow
from core.models.journal import FollowUp, JournalApplied

__all__ = [
    "ApiKey",
    "Book",
    "Chapter",
    "Document",
    "Fingerprint",
    "FollowUp",
    "JournalApplied",
    "Section",
    "SourceFile",
    "TimelineRow",
    "Volume",
]
