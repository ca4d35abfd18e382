import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO_BOOK = REPO / "examples" / "demo-book"
SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
REFCSV = SHARED / "refcsv"


def pytest_configure(config):
    os.environ.setdefault("WEBNOVEL_TESTING", "1")


@pytest.fixture
def api_key(db):
    """A raw write-scoped API key for all books."""
    from webnovel.services import apikey_create

    _, raw = apikey_create(name="test", scope="write", book=None)
    return raw


@pytest.fixture
def api(client, api_key):
    """A Django test client that sends the API key on every request."""
    client.defaults["HTTP_X_API_KEY"] = api_key
    return client
