"""REST endpoints of the storysystem app (mounted under /api/books/).

The reads are declared once in ``storysystem/interfaces.py`` and the journaled write (build and persist a
setting, ``POST {book}/story-system/build``) in ``storysystem/journal_ops.py``; ``webnovel/api.py``
generates their operations on this router.
"""

from ninja import Router

router = Router(tags=["故事系统"])
