import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO_BOOK_SOURCE = REPO / "examples" / "demo-book"


def _demo_book_copy() -> Path:
    # Tests work on a private copy of the demo book: services that write into a book folder
    # (story-system persistence, sync fixtures) must never modify the checked-in example.
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        return DEMO_BOOK_SOURCE
    parent = Path(tempfile.mkdtemp(prefix="wn-demo-"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, parent / "demo-book", ignore=shutil.ignore_patterns(".journal")))


DEMO_BOOK = _demo_book_copy()
SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
REFCSV = SHARED / "refcsv"


def pytest_configure(config):
    # BM25 segments stay in memory under tests: test databases reuse ids from run to run, so a segment
    # an earlier run kept on disk could pass for this run's. Set for the commands tests start in a
    # subprocess too; a run that names a folder keeps it.
    if not os.environ.get("WEBNOVEL_MEMORY_INDEX_DIR", "").strip():
        from django.conf import settings

        os.environ["WEBNOVEL_MEMORY_INDEX_DIR"] = "off"
        settings.WEBNOVEL_MEMORY_INDEX_DIR = None
    # The reference library's index likewise (a test names a folder to exercise the file).
    if not os.environ.get("WEBNOVEL_REFERENCE_INDEX_DIR", "").strip():
        from django.conf import settings

        os.environ["WEBNOVEL_REFERENCE_INDEX_DIR"] = "off"
        settings.WEBNOVEL_REFERENCE_INDEX_DIR = None
    # Semantic recall embeds every chapter a test writes with the real model (about a second a window on
    # two busy cores): off under tests, turned on by the tests of recall/ (tests/recall/), into a folder
    # of their own. A run that sets WEBNOVEL_RECALL keeps it.
    if not os.environ.get("WEBNOVEL_RECALL", "").strip():
        from django.conf import settings

        os.environ["WEBNOVEL_RECALL"] = "off"
        settings.WEBNOVEL_RECALL = False
    # demo_setup runs the demo on a copy (var/demo-book): under tests, on the session's copy.
    from webnovel.management.commands import demo_setup

    demo_setup.DEMO_BOOK = DEMO_BOOK


@pytest.fixture(autouse=True)
def _demo_book_journal_dropped():
    """The session's demo book copy is shared by every test, but each test's database is rolled back:
    what a test wrote into the copy's journal (.journal/, core/journal.py) must not be replayed by the
    next test's rebuild."""
    yield
    if DEMO_BOOK != DEMO_BOOK_SOURCE:
        shutil.rmtree(DEMO_BOOK / ".journal", ignore_errors=True)


@pytest.fixture
def api_key(db):
    """A raw write-scoped API key for all books."""
    from core.services import apikey_create

    _, raw = apikey_create(name="test", scope="write", book=None)
    return raw


@pytest.fixture
def api(client, api_key):
    """A Django test client that sends the API key on every request."""
    client.defaults["HTTP_X_API_KEY"] = api_key
    return client
