"""Extraction ingestion on SQLite and PostgreSQL side by side: seconds and SQL queries.

    python bench/bench_ingest.py [--quick] [--json] [--chapters 300] [--runs 20] \
        [--pg postgres://postgres@127.0.0.1:5432/wn_bench_ingest] [--no-pg] [--profile DIR]

The synthetic book (bench/gen_book.py, 300 chapters) is rebuilt into a fresh SQLite file and into
the PostgreSQL database ``--pg`` (migrated and **flushed**; default ``$PG_URL`` or
``postgres://postgres@127.0.0.1:5432/wn_bench_ingest``), then the same extraction set is ingested
into each, one fresh process per case:

- ``small``: the extraction of bench_faults.py / bench_load.py (one new entity, one scene) for
  ``runs`` chapters;
- ``rich``: the extraction of bench_entities.py (5 appeared, 1 new entity, 4 state changes,
  2 relationships, 1 uncertain, a scene) for ``runs`` chapters;
- ``replace``: the ``rich`` extraction of the first chapter again (the idempotent replace path).

Each case runs once with the after-commit hooks switched off (``extraction_ingest`` alone) and once
with them (the memory hook, as the API and ``manage.py ingest`` run it). Every call is counted with
``CaptureQueriesContext``: seconds per call (p50, total), SQL queries per call, and the statements
that ran most often. Last, ``manage.py ingest`` of the ``small`` extraction as a command (what
bench_faults.py times as "s / run": interpreter + Django start + the call).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, phase_run, stats, synthetic_book  # noqa: E402

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/wn_bench_ingest"


# --- phases (fresh subprocesses) ---------------------------------------------------------------------


def rebuild_phase(root: str) -> dict:
    from bookfiles.rebuilder import book_rebuild

    report = book_rebuild(root=Path(root))
    return {"ok": report.get("ok"), "book": report.get("book")}


def small_payload(number: int) -> dict:
    """The extraction bench_faults.py and bench_load.py post: one new entity and one scene."""
    return {
        "entities_new": [{"name": f"过客{number}号", "type": "角色", "aliases": [f"过客{number}"], "confidence": 0.9}],
        "state_changes": [],
        "relationships_new": [],
        "scenes": [{"index": 1, "location": "山门", "summary": f"第{number}次", "characters": []}],
    }


def _shape(sql: str) -> str:
    """A statement without its literal values, short enough to read in a table."""
    import re

    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    sql = re.sub(r"\b\d+\b", "N", sql)
    sql = re.sub(r"\((?:N|\?)(?:, (?:N|\?))+\)", "(…)", sql)
    return sql[:110]


def ingest_phase(root: str, shape: str, runs: int, hooks: bool, seed: int = 1) -> dict:
    """Ingest ``runs`` extractions of ``shape`` (one per chapter, or the same chapter again for
    ``replace``) and count the queries of each call."""
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.bench_entities import _book, _payload
    from entities.services.ingest import extraction_ingest

    if not hooks:
        settings.WEBNOVEL_AFTER_CHAPTER_HOOKS = []
    book = _book(root)
    last = book.chapters.order_by("-number").values_list("number", flat=True).first()
    rng = random.Random(seed)
    numbers = [1 + (last // 3 + i * 7) % last for i in range(runs)]
    if shape == "small":
        calls = [(n, small_payload(n)) for n in numbers]
    else:
        calls = [(n, _payload(book, n, rng)) for n in numbers]
        if shape == "replace":
            extraction_ingest(book=book, number=numbers[0], payload=calls[0][1])
            calls = [calls[0]] * runs
    times, queries, shapes, shape_time = [], [], Counter(), Counter()
    for n, payload in calls:
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            extraction_ingest(book=book, number=n, payload=payload)
            times.append(time.perf_counter() - start)
        queries.append(len(captured.captured_queries))
        for q in captured.captured_queries:
            shapes[_shape(q["sql"])] += 1
            shape_time[_shape(q["sql"])] += float(q["time"] or 0)
    return {
        "vendor": connection.vendor,
        "calls": len(calls),
        "seconds": stats(times),
        "total_s": sum(times),
        "queries_per_call": stats(queries),
        "queries_total": sum(queries),
        "top_by_count": shapes.most_common(6),
        "top_by_time": [(s, round(t, 3)) for s, t in shape_time.most_common(6)],
    }


def command_runs(db: str, slug: str, runs: int, workdir: Path) -> dict:
    """``manage.py ingest`` of the small extraction, ``runs`` times (one process each)."""
    env = {**os.environ, "DATABASE_URL": db, "DJANGO_SETTINGS_MODULE": "webnovel.settings"}
    times = []
    for i in range(runs):
        path = workdir / f"small-{i}.json"
        path.write_text(json.dumps(small_payload(250 + i), ensure_ascii=False), encoding="utf-8")
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "ingest", slug, str(250 + i), str(path)],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
    return {**stats(times), "total": sum(times)}


# --- main ------------------------------------------------------------------------------------------------


def main() -> None:
    bench = Bench("ingest", description=__doc__)
    bench.parser.add_argument("--chapters", type=int, default=300, help="synthetic book size (default 300)")
    bench.parser.add_argument("--runs", type=int, default=20, help="extractions per case (default 20; --quick: 5)")
    bench.parser.add_argument(
        "--pg", default=os.environ.get("PG_URL", DEFAULT_PG), help="PostgreSQL database (flushed!)"
    )
    bench.parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = bench.args
    runs = 5 if args.quick and args.runs == 20 else args.runs
    root = synthetic_book(args.chapters)

    databases = {"SQLite": None}
    if not args.no_pg:
        databases["PostgreSQL"] = args.pg
    rows = []
    for label, url in databases.items():
        if url is None:
            os.environ.pop("DATABASE_URL", None)
            db = bench.database(label="sqlite")
        else:
            os.environ["DATABASE_URL"] = url
            db = bench.database()
            os.environ.pop("DATABASE_URL", None)
        bench.log(f"{label}: rebuild of {args.chapters} chapters")
        rebuilt = phase_run("bench.bench_ingest:rebuild_phase", {"root": str(root)}, db=db)
        for shape in ("small", "rich", "replace"):
            for hooks in (False, True):
                name = f"{label}-{shape}-{'hooks' if hooks else 'nohooks'}"
                profile = bench.profile_path(name)
                bench.log(f"{label}: {shape}, hooks {'on' if hooks else 'off'}")
                out = phase_run(
                    "bench.bench_ingest:ingest_phase",
                    {"root": str(root), "shape": shape, "runs": runs, "hooks": hooks},
                    db=db,
                    profile=profile,
                )
                bench.profile_report(profile)
                r = out["result"]
                rows.append(
                    {
                        "database": label,
                        "extraction": shape,
                        "hooks": "on" if hooks else "off",
                        "calls": r["calls"],
                        "total_s": r["total_s"],
                        "p50_ms": r["seconds"]["p50"] * 1000,
                        "max_ms": r["seconds"]["max"] * 1000,
                        "queries/call": r["queries_per_call"]["p50"],
                        "queries": r["queries_total"],
                    }
                )
                bench.log(f"  most frequent: {r['top_by_count'][:3]}")
                bench.log(f"  most time: {r['top_by_time'][:3]}")
        command = command_runs(db, rebuilt["result"]["book"], max(3, runs // 4), bench.workdir())
        rows.append(
            {
                "database": label,
                "extraction": "small, `manage.py ingest`",
                "hooks": "on",
                "calls": command["n"],
                "total_s": command["total"],
                "p50_ms": command["p50"] * 1000,
                "max_ms": command["max"] * 1000,
                "queries/call": "—",
                "queries": "—",
            }
        )
    bench.table(
        f"Extraction ingestion, synthetic {args.chapters}-chapter book (seconds, SQL queries)",
        rows,
        ["database", "extraction", "hooks", "calls", "total_s", "p50_ms", "max_ms", "queries/call", "queries"],
    )
    bench.finish()


if __name__ == "__main__":
    main()
