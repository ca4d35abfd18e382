"""The demo book's sample Data Agent extractions (``examples/demo-extractions/第NNNN章.json``).

Extractions are not part of the book format (they come from the Data Agent, not from the book
folder), so they live next to the demo book rather than inside it. ``demo_setup`` and the tests load
them through the same service as ``manage.py ingest``; ingestion is idempotent per chapter, so
running this again leaves the same rows.
"""

import re
from pathlib import Path

from django.conf import settings
from django.db import transaction

from core.models import Book
from entities.services.ingest import extraction_ingest, extraction_parse

DEMO_EXTRACTIONS = Path(settings.BASE_DIR) / "examples" / "demo-extractions"
_FILE_NAME = re.compile(r"^第(\d{4})章\.json$")


def demo_extraction_files(*, folder: Path = DEMO_EXTRACTIONS) -> list[tuple[int, Path]]:
    """(chapter number, path) of every ``第NNNN章.json`` in ``folder``, in chapter order."""
    found = [(int(m.group(1)), p) for p in folder.glob("*.json") if (m := _FILE_NAME.match(p.name))]
    return sorted(found)


@transaction.atomic
def demo_extractions_ingest(*, book: Book, folder: Path = DEMO_EXTRACTIONS) -> list[dict]:
    """Ingest every sample extraction into ``book`` (one ``extraction_ingest`` per chapter file);
    returns the ingestion results in chapter order."""
    return [
        extraction_ingest(book=book, number=number, payload=extraction_parse(raw=path.read_bytes()))
        for number, path in demo_extraction_files(folder=folder)
    ]
