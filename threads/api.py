"""The REST router of the threads app (mounted under /api/books/).

The threads app has only reads: each is declared once in ``threads/interfaces.py`` and ``webnovel/api.py``
generates its GET operation on this router (so a session user needs this app's view permissions).
"""

from ninja import Router

router = Router(tags=["线索与信息差"])
