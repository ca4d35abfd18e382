"""REST endpoints of the memory app (mounted under /api/books/)."""

from ninja import Router

router = Router(tags=["长期记忆"])
