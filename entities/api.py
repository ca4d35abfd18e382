"""REST endpoints of the entities app (mounted under /api/books/)."""

from ninja import Router

router = Router(tags=["实体"])
