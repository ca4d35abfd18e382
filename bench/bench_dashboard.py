"""Dashboard pages: server time and query count of every page on a large book.

    python bench/bench_dashboard.py [--quick] [--json] [--keep] [--chapters 3000] [--repeat 5]

On a synthetic book (bench/gen_book.py, seed 1; 3,000 chapters, --quick 300) rebuilt into a fresh
database (SQLite, or $DATABASE_URL), one fresh process logs a user in with Django's test client and
requests every dashboard page ×N after one warm-up request. The figure is the server's time for the
whole request (middleware, selectors, SVG charts, template rendering), without a network or a
browser; the query count shows that no page issues a query per chapter or per row.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Bench, phase_run, stats, synthetic_book  # noqa: E402


def pages_phase(repeat: int) -> list[dict]:
    """Time every dashboard page of the (only) book in the database."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from core.models import Book
    from entities.models import Entity
    from threads.models import Thread
    from threads.selectors import thread_list_overdue

    book = Book.objects.get()
    overdue = thread_list_overdue(book=book)["threads"]
    thread = overdue[0]["id"] if overdue else Thread.objects.filter(book=book).order_by("thread_id").first().thread_id
    entity = (
        Entity.objects.filter(book=book)
        .order_by("-is_protagonist", "-tier", "entity_id")
        .values_list("entity_id", flat=True)
        .first()
    )
    current = book.chapters.order_by("-number").values_list("number", flat=True).first()
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    base = f"/dashboard/{book.slug}/"
    pages = {
        "books": "/dashboard/",
        "overview": base,
        "threads board": f"{base}threads/",
        "thread": f"{base}threads/{thread}/",
        "entities": f"{base}entities/",
        "entity": f"{base}entities/{entity}/",
        "entity as of": f"{base}entities/{entity}/?as_of={current // 2}",
        "secrets": f"{base}secrets/",
        "context preview": f"{base}context/?chapter={current + 1}&budget=4000",
        "style drift": f"{base}style/",
        "continuity re-check (last 20 chapters)": f"{base}continuity/",
        "memory": f"{base}memory/",
    }
    rows = []
    for name, url in pages.items():
        client.get(url)  # warm-up: per-process caches of other apps are built once
        times = []
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                resp = client.get(url)
                times.append(time.perf_counter() - start)
        rows.append(
            {
                "page": name,
                "url": url,
                "status": resp.status_code,
                "bytes": len(resp.content),
                "queries": len(queries.captured_queries),
                **{k: v * 1000 for k, v in stats(times).items() if k in ("p50", "p95", "max")},
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    bench = Bench("dashboard", description=__doc__, argv=argv)
    bench.parser.add_argument(
        "--chapters", type=int, default=None, help="synthetic book size (default 3000; --quick 300)"
    )
    bench.parser.add_argument("--repeat", type=int, default=None, help="requests per page (default 5; --quick 2)")
    args = bench.args
    chapters = args.chapters or (300 if args.quick else 3000)
    repeat = args.repeat or (2 if args.quick else 5)

    bench.log(f"synthetic {chapters}: generate (cached) and rebuild")
    root = synthetic_book(chapters)
    db = bench.database(label="db-dashboard")
    rebuilt = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"rebuilt in {rebuilt['seconds']:.1f}s; timing pages ×{repeat}")
    rows = phase_run("bench.bench_dashboard:pages_phase", {"repeat": repeat}, db=db)["result"]
    bench.table(
        f"Dashboard pages, {chapters:,} chapters (server time per request, ms, ×{repeat})",
        [
            {
                "page": r["page"],
                "status": r["status"],
                "queries": r["queries"],
                "KB": r["bytes"] / 1024,
                "p50 ms": r["p50"],
                "p95 ms": r["p95"],
                "max ms": r["max"],
            }
            for r in rows
        ],
    )
    slowest = max(rows, key=lambda r: r["p50"])
    bench.note(
        f"Slowest page: {slowest['page']} ({slowest['url']}), p50 {slowest['p50']:.0f} ms, {slowest['queries']} queries."
    )
    bench.extra["pages"] = rows
    bench.finish()
    return 0 if all(r["status"] == 200 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
