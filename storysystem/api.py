"""REST endpoints of the storysystem app (mounted under /api/books/)."""

from ninja import Router

router = Router(tags=["故事系统"])
