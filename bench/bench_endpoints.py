"""Per-request cost of each GET endpoint of bench_load.py's read mix, in one process.

    python bench/bench_endpoints.py [--quick] [--json] [--keep] [--profile DIR]
                                    [--chapters 300] [--repeat 30] [--only context,reports/stats]

bench_load.py measures the whole server under load, where 2 shared CPUs make wall times noisy.
This script asks what each request of that mix costs on its own: the synthetic book
(bench/gen_book.py, seed 1, 300 chapters) is rebuilt into a fresh database (SQLite, or
``$DATABASE_URL``), then every endpoint of the mix is called through Django's test client with a
write-scoped API key, with the same random inputs ``bench_load.read_paths`` draws (seeded), one
warm-up call each and ``repeat`` timed calls. Per endpoint: wall p50 / p95, CPU time of the process
(``time.process_time``: robust to other processes on the machine, not to cache effects), SQL
queries per call, Python function calls per call (cProfile's total, in a separate pass: the same
on any machine, so two versions of the code compare even when the CPU figures are noisy),
response size, and the endpoint's share of the mix's CPU (the mix picks each
endpoint equally often). The caches the code keeps per process are warm after the first call, as
in a long-lived gunicorn worker; a second pass makes each call right after one ingestion POST (the
payload of bench_load.py's writer, untimed), which is what the load bench's readers meet: the caches
keyed by database stamps are then cold. ``--quick``: 5 timed calls per endpoint.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_load import book_names, read_paths  # noqa: E402
from bench.common import Bench, book_copy, django_setup, percentile, synthetic_book  # noqa: E402

# A path of the mix → its endpoint (the book prefix and the query string are dropped).
_NORMALIZE = [
    (re.compile(r"^/api/books/[^/?]+/"), ""),
    (re.compile(r"\?.*$"), ""),
    (re.compile(r"^chapters/\d+"), "chapters/{n}"),
    (re.compile(r"^threads/(?!overdue$)[^/]+$"), "threads/{id}"),
    (re.compile(r"^chapters/\{n\}$"), "chapters/{n} (meta)"),
]


def endpoint_of(path: str) -> str:
    """The endpoint a path of ``read_paths`` calls, e.g. ``chapters/{n}/context``."""
    for pattern, repl in _NORMALIZE:
        path = pattern.sub(repl, path)
    return path


def mix_draw(*, slug: str, chapters: int, names: list[str], threads: list[str], per_endpoint: int, seed: int):
    """``per_endpoint`` paths for every endpoint of the mix, drawn by ``read_paths`` itself (seeded)."""
    random.seed(seed)
    drawn: dict[str, list[str]] = {}
    last_new = 0
    for i in range(per_endpoint * 200 + 1000):
        path = read_paths(slug, chapters, names, threads)
        if endpoint_of(path) not in drawn:
            last_new = i
        bucket = drawn.setdefault(endpoint_of(path), [])
        if len(bucket) < per_endpoint:
            bucket.append(path)
        # Done when every endpoint seen has its paths and 1,000 draws brought no new endpoint.
        if i - last_new >= 1000 and all(len(b) >= per_endpoint for b in drawn.values()):
            break
    return drawn


class QueryCounter:
    """``connection.execute_wrapper`` that only counts (cheaper than CaptureQueriesContext's SQL text)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def ingest_one(client, *, slug: str, chapters: int, i: int) -> None:
    """One POST of the ingester of bench_load.py (same payload shape: a new minor character, one scene)."""
    n = random.randint(1, chapters)
    payload = {
        "entities_new": [{"name": f"过客{n}号", "type": "角色", "confidence": 0.9}],
        "scenes": [{"index": 1, "location": "山门", "summary": f"第{i}次提交", "characters": []}],
    }
    response = client.post(f"/api/books/{slug}/chapters/{n}/extraction", payload, content_type="application/json")
    if response.status_code != 200:
        raise RuntimeError(f"ingest {n}: {response.status_code} {response.content[:200]!r}")


def python_calls(client, paths: list[str]) -> int:
    """Python function calls made by these requests (cProfile's total): a machine-independent
    measure of the work, to compare two versions of the code on a busy machine."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for path in paths:
        client.get(path)
    profiler.disable()
    return pstats.Stats(profiler).total_calls


def endpoints_measure(
    bench: Bench, client, paths: dict[str, list[str]], *, after_write: tuple[str, int] | None = None
) -> list[dict]:
    """Time every endpoint's calls; with ``after_write=(slug, chapters)``, each call follows one
    ingestion (untimed), as under bench_load.py's writer: the per-process caches keyed by database
    stamps are then cold."""
    from django.db import connection

    rows = []
    writes: list[float] = []
    for name, todo in paths.items():
        if bench.args.only and not any(part in name for part in bench.args.only.split(",")):
            continue
        client.get(todo[0])  # warm-up: per-process caches, imports
        counter = QueryCounter()
        walls, cpus, sizes, statuses = [], [], [], Counter()
        suffix = "_after_write" if after_write else ""
        profile = bench.profile_path(re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") + suffix)
        profiler = None
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        for i, path in enumerate(todo[1:]):
            if after_write:
                if profiler is not None:
                    profiler.disable()
                cpu0 = time.process_time()
                ingest_one(client, slug=after_write[0], chapters=after_write[1], i=i)
                writes.append(time.process_time() - cpu0)
                if profiler is not None:
                    profiler.enable()
            with connection.execute_wrapper(counter):
                cpu0, wall0 = time.process_time(), time.perf_counter()
                response = client.get(path)
            walls.append(time.perf_counter() - wall0)
            cpus.append(time.process_time() - cpu0)
            sizes.append(len(response.content))
            statuses[response.status_code] += 1
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
            bench.profile_report(profile)
        calls = len(walls)
        py_calls = None if after_write else python_calls(client, todo[1:]) / calls
        rows.append(
            {
                "endpoint": name,
                "calls": calls,
                "p50_ms": round(percentile(walls, 50) * 1000, 2),
                "p95_ms": round(percentile(walls, 95) * 1000, 2),
                "cpu_ms": round(statistics.fmean(cpus) * 1000, 2),
                # The median too: one full garbage collection over a big heap (a 3,000-chapter
                # BM25 index alive) costs ~100 ms and lands on whichever call triggers it.
                "cpu_p50_ms": round(percentile(cpus, 50) * 1000, 2),
                "queries": round(counter.count / calls, 1),
                "py_calls_k": None if py_calls is None else round(py_calls / 1000, 1),
                "kB": round(statistics.fmean(sizes) / 1000, 1),
                "statuses": " ".join(f"{k}×{v}" for k, v in sorted(statuses.items())),
            }
        )
        bench.log(f"{name}: p50 {rows[-1]['p50_ms']} ms, CPU {rows[-1]['cpu_ms']} ms, {rows[-1]['queries']} queries")
    total = sum(r["cpu_ms"] for r in rows) or 1.0
    for r in rows:
        r["mix_cpu_%"] = round(100 * r["cpu_ms"] / total, 1)
    if writes:
        bench.extra["ingest_cpu_ms"] = round(statistics.fmean(writes) * 1000, 2)
        bench.note(
            f"the ingestion POSTs themselves (with their after-commit memory hook): {len(writes)} calls, "
            f"CPU {statistics.fmean(writes) * 1000:.1f} ms mean, p50 {percentile(writes, 50) * 1000:.1f} ms"
        )
    return sorted(rows, key=lambda r: -r["cpu_ms"])


def main() -> int:
    bench = Bench("endpoints", description=__doc__)
    bench.parser.add_argument("--chapters", type=int, default=300, help="chapters of the synthetic book")
    bench.parser.add_argument("--repeat", type=int, default=30, help="timed calls per endpoint")
    bench.parser.add_argument("--seed", type=int, default=1, help="seed of the drawn inputs")
    bench.parser.add_argument("--only", default="", help="comma-separated substrings of endpoint names")
    args = bench.args
    repeat = 5 if args.quick else args.repeat

    db_url = bench.database()
    # Each ingestion makes the context pack rebuild its BM25 index and write it to disk (2.6 MB on
    # 300 chapters, 55 MB on 3,000): into this run's folder, not the repository's var/.
    os.environ.setdefault("WEBNOVEL_MEMORY_INDEX_DIR", str(bench.workdir() / "memory-index"))
    root = book_copy(synthetic_book(args.chapters, seed=1), bench.workdir())
    django_setup(db_url)
    from django.test import Client

    from bookfiles.rebuilder import book_rebuild
    from core.services import apikey_create

    bench.log(f"rebuild {args.chapters} chapters into {db_url.split(':', 1)[0]}")
    start = time.perf_counter()
    book_rebuild(root=root)
    bench.log(f"rebuilt in {time.perf_counter() - start:.1f} s")
    from bench.bench_finalize import book_for_root

    slug = book_for_root(root).slug
    _, key = apikey_create(name="bench", scope="write", book=None)
    names, threads = book_names(db_url, slug)
    paths = mix_draw(
        slug=slug, chapters=args.chapters, names=names, threads=threads, per_endpoint=repeat + 1, seed=args.seed
    )
    client = Client(HTTP_X_API_KEY=key)
    warm = endpoints_measure(bench, client, paths)
    bench.table(
        f"bench_load.py's read mix, {args.chapters}-chapter synthetic book, {repeat} calls each after a warm-up "
        "(CPU = process time per call: mean, p50)",
        warm,
    )
    cold = {r["endpoint"]: r for r in endpoints_measure(bench, client, paths, after_write=(slug, args.chapters))}
    bench.table(
        "the same calls, each right after one ingestion POST (bench_load.py's writer): per-process caches cold",
        [
            {
                "endpoint": r["endpoint"],
                "p50_ms": cold[r["endpoint"]]["p50_ms"],
                "cpu_ms": cold[r["endpoint"]]["cpu_ms"],
                "cpu_p50_ms": cold[r["endpoint"]]["cpu_p50_ms"],
                "cpu_ms_warm": r["cpu_ms"],
                "queries": cold[r["endpoint"]]["queries"],
                "queries_warm": r["queries"],
                "statuses": cold[r["endpoint"]]["statuses"],
            }
            for r in warm
        ],
    )
    for label, rows in (("warm", warm), ("after a write", list(cold.values()))):
        mean = sum(r["cpu_ms"] for r in rows) / max(len(rows), 1)
        bench.note(f"mean CPU per request of the mix (each endpoint equally likely), {label}: {mean:.1f} ms")
        bench.extra[f"mix_cpu_ms_per_request_{'warm' if label == 'warm' else 'after_write'}"] = round(mean, 2)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
