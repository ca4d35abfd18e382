"""PostgreSQL at scale, side by side with SQLite: a 3,000-chapter book rebuilt, finalized and queried.

    python bench/bench_pg_scale.py [--quick] [--json] [--chapters 3000] [--pg postgres://…/wn_pgscale]

For each database (a fresh SQLite file in WAL mode, and a PostgreSQL database that is dropped and
created afresh: default ``postgres://postgres@127.0.0.1:5432/wn_pgscale``), one child process
migrates, rebuilds the synthetic book (bench/gen_book.py), finalizes 5 new chapters one by one and
times a set of reads through the API (Django test client, so the figures are the app's, not the
network's): keyword search (2- and 4-character), regex search, a chapter body, the threads
overdue report, an alias lookup and the context pack. On PostgreSQL it also reports whether the
search plan uses the ``pg_trgm`` index. Figures are medians of 5 calls after one warm-up call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
READS = {
    "search 2 chars": ("/search", {"q": "{n2}"}),
    "search 4 chars": ("/search", {"q": "{n4}"}),
    "search regex": ("/search/regex", {"pattern": "{n2}.{{0,3}}剑"}),
    "chapter body": ("/chapters/{mid}/body", {}),
    "threads overdue": ("/threads/overdue", {}),
    "alias lookup": ("/entities/by-alias", {"alias": "{n2}"}),
    "context pack": ("/chapters/{next}/context", {"task": "write"}),
}


def _phase(book: str, chapters: int) -> dict[str, Any]:
    """Runs inside the child (Django set up on $DATABASE_URL)."""
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from bench.common import book_copy
    from bench.gen_book import chapter_append
    from bookfiles.rebuilder import book_rebuild, chapter_finalize
    from core.models import Book
    from core.services import apikey_create

    call_command("migrate", verbosity=0, interactive=False)
    work = Path(tempfile.mkdtemp(prefix="wn-pgscale-"))
    root = book_copy(Path(book), work)
    out: dict[str, Any] = {"vendor": connection.vendor}
    start = time.perf_counter()
    report = book_rebuild(root=root)
    out["rebuild_s"] = round(time.perf_counter() - start, 2)
    assert report["ok"], report["errors"][:3]
    book_row = Book.objects.get(slug=report["book"])
    times = []
    for number in range(chapters + 1, chapters + 6):
        chapter_append(root, number=number)
        start = time.perf_counter()
        chapter_finalize(book=book_row, number=number)
        times.append(time.perf_counter() - start)
    out["finalize_p50_s"] = round(statistics.median(times), 3)
    _, raw = apikey_create(name="scale", scope="read", book=None)
    client = Client(HTTP_X_API_KEY=raw)
    from entities.models import Alias

    alias = Alias.objects.filter(entity__book=book_row).order_by("id").values_list("alias", flat=True).first() or "林"
    values = {
        "n2": alias[:2],
        "n4": alias[:4] if len(alias) >= 4 else alias,
        "mid": chapters // 2,
        "next": chapters + 6,
    }
    reads = {}
    for name, (path, params) in READS.items():
        url = f"/api/books/{book_row.slug}" + path.format(**values)
        query = {k: v.format(**values) for k, v in params.items()}
        status = client.get(url, query).status_code
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            client.get(url, query)
            samples.append(time.perf_counter() - start)
        reads[name] = {"ms": round(statistics.median(samples) * 1000, 1), "status": status}
    out["reads"] = reads
    if connection.vendor == "postgresql":
        like = f"%{values['n4']}%"
        with connection.cursor() as cur:
            cur.execute(
                "EXPLAIN SELECT count(*) FROM webnovel_search_line l WHERE l.book_id = %s AND l.text LIKE %s",
                [book_row.pk, like],
            )
            out["search_plan"] = " / ".join(r[0].strip() for r in cur.fetchall()[:4])
            cur.execute("SET enable_seqscan = off")
            cur.execute("EXPLAIN SELECT count(*) FROM webnovel_search_line l WHERE l.text LIKE %s", [like])
            plan = "\n".join(r[0] for r in cur.fetchall())
            cur.execute("RESET enable_seqscan")
        out["search_uses_trgm_index"] = "webnovel_search_line_trgm" in plan
        with connection.cursor() as cur:
            cur.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            out["database_size"] = cur.fetchone()[0]
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] == "phase":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
        import django

        django.setup()
        print(json.dumps(_phase(argv[1], int(argv[2]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 chapters")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="accepted for run_all.py (nothing to keep)")
    parser.add_argument("--chapters", type=int, default=3000)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/wn_pgscale")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.chapters = 300
    from bench.common import pg_database_create, synthetic_book

    book = synthetic_book(opts.chapters, seed=1)
    load_start = os.getloadavg()[0]
    results = {}
    work = Path(tempfile.mkdtemp(prefix="wn-pgscale-"))
    for label, url in (("sqlite", f"sqlite:///{work / 'scale.sqlite3'}"), ("postgresql", opts.pg)):
        if label == "postgresql":
            pg_database_create(url, drop=True)
        env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(REPO)}
        print(f"{label}: rebuild, finalize ×5, reads on {opts.chapters} chapters …", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, __file__, "phase", str(book), str(opts.chapters)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{label} phase failed: {proc.stderr[-3000:]}")
        results[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    figures = {
        "chapters": opts.chapters,
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "cpus": os.cpu_count(),
        **results,
    }
    if opts.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return 0
    s, p = results["sqlite"], results["postgresql"]
    print(f"{opts.chapters} chapters, load average {figures['load_average']} ({figures['cpus']} CPUs)")
    print(f"{'':22}{'SQLite':>12}{'PostgreSQL':>14}")
    print(f"{'rebuild (s)':22}{s['rebuild_s']:>12}{p['rebuild_s']:>14}")
    print(f"{'finalize p50 (s)':22}{s['finalize_p50_s']:>12}{p['finalize_p50_s']:>14}")
    for name in READS:
        a, b = s["reads"][name], p["reads"][name]
        print(f"{name + ' (ms)':22}{a['ms']:>12}{b['ms']:>14}   status {a['status']}/{b['status']}")
    print(f"pg_trgm index serves LIKE: {p.get('search_uses_trgm_index')}; PG size {p.get('database_size')}")
    print(f"PG plan of a 4-character search: {p.get('search_plan')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
