"""PostgreSQL-only checks (skipped on SQLite): keyword search is served by the pg_trgm GIN index."""

import pytest
from django.db import connection

from bookfiles.rebuilder import book_rebuild
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only (set DATABASE_URL)")


def test_search_lines_have_a_trigram_index_that_serves_like(db, api):
    assert book_rebuild(root=DEMO_BOOK)["ok"] is True
    with connection.cursor() as cur:
        cur.execute("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'")
        assert cur.fetchone() == ("pg_trgm",)
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'webnovel_search_line_trgm'")
        assert "gin_trgm_ops" in cur.fetchone()[0]
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN SELECT count(*) FROM webnovel_search_line WHERE text LIKE %s", ["%林风拾起%"])
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert "webnovel_search_line_trgm" in plan
    response = api.get("/api/books/demo-book/search", {"q": "林风"})
    assert response.status_code == 200
    assert response.json()["total"] > 0
