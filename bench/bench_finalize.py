"""Finalizing one new chapter must not grow with the book; neither must a sync after one edit.

    python bench/bench_finalize.py [--quick] [--json] [--keep] [--repeat 20] [--chapters 300,3000]

For each synthetic book (300 and 3,000 chapters, copied from the cache so files can be written):
rebuild it into a fresh database (not measured here: see bench_rebuild), then, in one fresh process:

- finalize: ``repeat`` times, write the next chapter file N+1 (bench.gen_book.chapter_append: same
  cast and style) and time ``chapter_finalize(book=…, number=N+1)``. The first call of the process is
  reported apart ("cold": it may build caches such as the alias matcher); p50 / p95 are over the others.
- sync: ``book_sync(book=…)`` with nothing changed, then ``repeat // 2`` times with one chapter
  edited (a sentence appended to a chapter in the middle of the book).

Goal: finalize p50 on 3,000 chapters ≤ 1.5× the p50 on 300 chapters.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    Bench,
    book_copy,
    cpu_seconds,
    goal_mark,
    phase_run,
    stage_timers_install,
    stats,
    synthetic_book,
)

GOAL_RATIO = 1.5


# --- phases (run in a fresh subprocess by phase_run) ------------------------------------------------


def book_for_root(root: Path):
    """The Book row a rebuild of ``root`` created (matched by its root path, else by its slug)."""
    from core.models import Book

    root = Path(root).resolve()
    book = Book.objects.filter(root=str(root)).first()
    if book is None:
        import yaml

        config = yaml.safe_load((root / "book.yaml").read_text(encoding="utf-8")) or {}
        book = Book.objects.get(slug=config.get("slug") or root.name)
    return book


def rebuild_phase(root: str) -> dict:
    from bookfiles.rebuilder import book_rebuild

    report = book_rebuild(root=Path(root))
    return {k: (len(v) if isinstance(v, list) else v) for k, v in (report or {}).items() if not isinstance(v, dict)}


def finalize_phase(root: str, repeat: int) -> dict:
    from bench.gen_book import chapter_append
    from bookfiles.rebuilder import chapter_finalize

    root_path = Path(root)
    from core.models import Chapter

    stages = stage_timers_install()
    samples, cpu, numbers, added, warnings = [], [], [], 0, 0
    per_stage: dict[str, list[float]] = {}
    own: list[float] = []
    for _ in range(repeat + 1):
        path = chapter_append(root_path)
        number = int("".join(ch for ch in path.stem if ch.isdigit()))
        book = book_for_root(root_path)
        before = dict(stages)
        cpu_start, start = cpu_seconds(), time.perf_counter()
        report = chapter_finalize(book=book, number=number)
        samples.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - cpu_start)
        spent = {k: v - before.get(k, 0.0) for k, v in stages.items()}
        spent["core (rows, transaction)"] = samples[-1] - sum(spent.values())
        for k, v in spent.items():
            per_stage.setdefault(k, []).append(v)
        # The rebuilder's own share: the call minus the plugged-in indexers and hooks.
        own.append(samples[-1] - sum(v for k, v in spent.items() if k.startswith(("indexer ", "hook "))))
        numbers.append(number)
        added += sum(1 for p in report.get("added", []) if p.endswith(path.name))
        warnings += len(report.get("warnings", []))
    return {
        "cold": samples[0],
        "warm": stats(samples[1:]) if repeat else None,
        "warm_cpu": stats(cpu[1:]) if repeat else None,
        "own_p50": stats(own[1:])["p50"] if repeat else None,
        "stages_p50": {k: stats(v[1:])["p50"] for k, v in per_stage.items() if len(v) > 1},
        "numbers": [numbers[0], numbers[-1]],
        # sanity: every new chapter was reported as added and is in the database
        "added": added,
        "chapters_in_db": Chapter.objects.filter(book=book).count(),
        "warnings": warnings,
    }


def sync_phase(root: str, repeat: int, chapters: int) -> dict:
    from bookfiles.rebuilder import book_sync

    root_path = Path(root)
    book = book_for_root(root_path)
    start = time.perf_counter()
    book_sync(book=book)
    noop = time.perf_counter() - start
    samples, changed = [], []
    for i in range(repeat):
        number = chapters // 2 + i * 7
        path = next((root_path / "定稿" / "正文").rglob(f"第{number:04d}章.md"))
        with path.open("a", encoding="utf-8") as f:
            f.write(f"\n修订：第{i + 1}次校对时补上的一句话。\n")
        book = book_for_root(root_path)
        start = time.perf_counter()
        report = book_sync(book=book)
        samples.append(time.perf_counter() - start)
        changed.append(len(report.get("changed", [])))
    return {"noop": noop, "edited": stats(samples), "changed_per_sync": changed}


# --- the benchmark ----------------------------------------------------------------------------------


def size_measure(bench: Bench, n: int, repeat: int) -> tuple[dict, dict, float]:
    """Rebuild a copy of the n-chapter book, then time finalize and sync on it."""
    bench.log(f"{n} chapters: copy book, rebuild (setup)")
    root = book_copy(synthetic_book(n), bench.workdir() / f"book{n}")
    db = bench.database(label=f"db{n}")
    setup = phase_run("bench.bench_finalize:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"{n} chapters: rebuilt in {setup['seconds']:.1f}s; finalize ×{repeat + 1}")
    profile = bench.profile_path(f"finalize-{n}")
    fin = phase_run(
        "bench.bench_finalize:finalize_phase", {"root": str(root), "repeat": repeat}, db=db, profile=profile
    )
    bench.profile_report(profile)
    warm = fin["result"]["warm"]
    row = {
        "chapters": n,
        "cold s": fin["result"]["cold"],
        "p50 s": warm["p50"],
        "p95 s": warm["p95"],
        "cpu p50 s": fin["result"]["warm_cpu"]["p50"],
        "rebuilder-only p50 s": fin["result"]["own_p50"],
        "mean s": warm["mean"],
        "max s": warm["max"],
        "n": warm["n"],
        "peak RSS MB": fin["peak_rss_mb"],
        "check": "ok" if fin["result"]["added"] == repeat + 1 else f"added {fin['result']['added']}",
    }
    bench.log(f"{n} chapters: finalize p50 {warm['p50'] * 1000:.0f} ms; sync")
    sync = phase_run(
        "bench.bench_finalize:sync_phase",
        {"root": str(root), "repeat": max(3, repeat // 2), "chapters": n},
        db=db,
        profile=bench.profile_path(f"sync-{n}"),
    )
    bench.profile_report(bench.profile_path(f"sync-{n}"))
    edited = sync["result"]["edited"]
    sync_row = {
        "chapters": n,
        "no change s": sync["result"]["noop"],
        "1 edited p50 s": edited["p50"],
        "1 edited p95 s": edited["p95"],
        "n": edited["n"],
        "peak RSS MB": sync["peak_rss_mb"],
        "changed files": "/".join(str(c) for c in sync["result"]["changed_per_sync"]),
    }
    bench.extra.setdefault("details", {})[str(n)] = {"setup_rebuild": setup, "finalize": fin, "sync": sync}
    bench.extra.setdefault("stage_rows", []).extend(
        {"chapters": n, "stage": k, "p50 s": v, "share of p50 %": 100 * v / warm["p50"]}
        for k, v in sorted(fin["result"]["stages_p50"].items(), key=lambda kv: -kv[1])
    )
    return row, sync_row, (warm["p50"], fin["result"]["own_p50"])


def main(argv: list[str] | None = None) -> int:
    bench = Bench("finalize", description=__doc__, argv=argv)
    bench.parser.add_argument("--repeat", type=int, default=20, help="finalize calls timed per book (default 20)")
    bench.parser.add_argument("--chapters", default=None, help="comma-separated sizes (default 300,3000; --quick: 300)")
    args = bench.args
    sizes = [int(s) for s in (args.chapters or ("300" if args.quick else "300,3000")).split(",") if s]
    repeat = 5 if args.quick and args.repeat == 20 else args.repeat

    rows, sync_rows, p50s = [], [], {}
    for n in sizes:
        measured = bench.attempt(f"{n} chapters", lambda n=n: size_measure(bench, n, repeat))
        if measured:
            row, sync_row, p50s[n] = measured
            rows.append(row)
            sync_rows.append(sync_row)

    bench.table("chapter_finalize of one new chapter (N+1)", rows)
    bench.table("book_sync", sync_rows)
    if bench.extra.get("stage_rows"):
        bench.table("Where a finalize's time goes (p50 per stage, timers, no profiler)", bench.extra["stage_rows"])
    if len(p50s) >= 2:
        small, large = min(p50s), max(p50s)
        ratio = p50s[large][0] / p50s[small][0]
        own_ratio = p50s[large][1] / p50s[small][1] if p50s[small][1] else None
        bench.extra["finalize_ratio"] = ratio
        bench.extra["finalize_ratio_rebuilder_only"] = own_ratio
        bench.note(
            f"finalize p50 {large:,} / {small:,} chapters = {ratio:.2f}× "
            f"(goal ≤ {GOAL_RATIO:g}×: {goal_mark(ratio, GOAL_RATIO)}); "
            f"rebuilder only (without the configured indexers and after-chapter hooks): "
            f"{own_ratio:.2f}× ({goal_mark(own_ratio, GOAL_RATIO)})"
        )
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
