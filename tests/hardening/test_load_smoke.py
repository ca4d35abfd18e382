"""A small version of bench/bench_load.py: gunicorn with 2 worker processes, 4 reader clients, an
ingesting writer and a finalizer on the same book for a few seconds → zero errors ("database is
locked" included) and no traceback in the server log. Counts only; speed is bench_load's business."""

import json

import pytest

from bench.bench_faults import child_run
from bench.bench_load import Server, api_key_create, book_names, load_run, manage

# a gunicorn under concurrent load: `-m "not slow"` skips it locally
pytestmark = pytest.mark.slow


def test_gunicorn_under_concurrent_reads_ingestion_and_finalize_has_no_error(child_db, demo_copy, tmp_path):
    proc = manage("rebuild", str(demo_copy), "--json", db_url=child_db)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["chapters"] == 24
    key = api_key_create(child_db)
    names, threads = book_names(child_db, "demo-book")
    assert names and threads
    server = Server(child_db, workers=2, log=tmp_path / "gunicorn.log")
    try:
        figures = load_run(
            port=server.port,
            key=key,
            slug="demo-book",
            root=demo_copy,
            db_url=child_db,
            clients=4,
            seconds=6,
            chapters=24,
            names=names,
            threads=threads,
        )
    finally:
        server.stop()
    assert figures["error_samples"] == []
    assert figures["errors"] == 0
    assert figures["reads"] > 0 and figures["writes"] > 0 and figures["finalizes"] >= 1
    assert "Traceback" not in (tmp_path / "gunicorn.log").read_text(errors="replace")
    book = json.loads(json.loads(child_run("dump", db_url=child_db).stdout)["books"]["demo-book"])
    numbers = [c["number"] for c in book["chapters"]]
    assert numbers == list(range(1, 25 + figures["finalizes"]))  # every finalized chapter landed
