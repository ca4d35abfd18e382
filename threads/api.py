"""REST endpoints of the threads app (mounted under /api/books/)."""

from ninja import Router

router = Router(tags=["线索与信息差"])
