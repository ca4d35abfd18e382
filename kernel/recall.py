"""The semantic side of search, registered from above: the core's ``search`` read and the memory app's
recall ask here for it, since the app that embeds text (recall/) sits above the core and below memory
and registers itself in its ``AppConfig.ready()``. With nothing registered, recall is keyword-only."""

from typing import Any, Protocol


class SemanticProvider(Protocol):
    def status(self, *, book: Any) -> tuple[bool, str]:
        """(usable for this book, the Chinese reason when not)."""

    def search(self, *, book: Any, query: str, mode: str, limit: int, max_chapter: int | None = None) -> list[dict]:
        """The best windows for ``query`` (``mode`` semantic | hybrid | bm25), best first, one per chapter
        unless asked otherwise: ``{"chapter", "kind", "order", "line", "text", "score", "signals"}``."""


_provider: list[SemanticProvider] = []


def semantic_register(provider: SemanticProvider) -> None:
    """Install the semantic provider (one per process; a second registration replaces the first)."""
    _provider[:] = [provider]


def semantic_get() -> SemanticProvider | None:
    return _provider[0] if _provider else None
