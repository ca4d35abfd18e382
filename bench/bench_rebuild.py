"""Full rebuild speed and memory, against the floor of just reading and parsing the same files.

    python bench/bench_rebuild.py [--quick] [--json] [--keep] [--chapters 300,3000]
    python bench/bench_rebuild.py --base /tmp/base-tree [--rounds 3] [--chapters 3000]

Cases: 西游记 (../shared/corpus/xiyouji.txt, imported into a book folder first), and synthetic books
of 300 and 3,000 chapters (bench/gen_book.py, seed 1). For each case, in fresh subprocesses on a
fresh database:

- floor: ``bookfiles.parser.book_read(root)``: read, hash and parse every file, no database (best of 2);
- rebuild: ``bookfiles.rebuilder.book_rebuild(root=root)`` into the empty database;
- rebuild again: the same over the now-populated database (what an author's "rebuild" usually is);
- tables only: the cold rebuild with no chapter indexer and no after-chapter hook configured, into
  another empty database: the rebuilder itself (files → the book's tables, one transaction).

Reported: chapters/s, MB/s, peak RSS of the rebuild process, and rebuild / floor. Goals for 3,000
chapters: rebuild ≤ 3× the floor, peak RSS ≤ 400 MB.

The journal case (issue 14 item 7): a copy of the synthetic book of 3,000 chapters (``--quick``: 300)
whose ``.journal/`` holds one Data Agent extraction ingested per chapter (written as the journal writes
them, ``core/journal.py``), rebuilt cold into an empty database, against the same book without the
journal rebuilt cold into another: the replay's cost. Goal: ≤ 1.5×.

``--base TREE``: only the comparison of this tree with another checkout (``git archive`` of a commit into
a folder) on the synthetic book, floor / cold rebuild / tables only, alternating tree by tree for
``--rounds`` rounds, CPU seconds per round and their median (issue 29's figures).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    REPO,
    Bench,
    book_size,
    goal_mark,
    page_cache_warm,
    phase_run,
    stage_timers_install,
    synthetic_book,
)

CORPUS = Path(__import__("os").environ.get("WEBNOVEL_SHARED", REPO.parent / "shared")) / "corpus"
XIYOUJI = CORPUS / "xiyouji.txt"
GOAL_RATIO = 3.0
GOAL_RSS_MB = 400.0
GOAL_CHAPTERS = 3000
GOAL_JOURNAL_RATIO = 1.5


# --- phases (run in a fresh subprocess by phase_run) ------------------------------------------------


def floor_phase(root: str) -> dict:
    from bookfiles.parser import book_read

    book = book_read(Path(root))
    return {"chapters": len(book.chapters), "errors": len(book.errors), "warnings": len(book.warnings)}


def rebuild_phase(root: str) -> dict:
    from bookfiles.rebuilder import book_rebuild

    stages = stage_timers_install()
    start = time.perf_counter()
    summary = report_summary(book_rebuild(root=Path(root)))
    total = time.perf_counter() - start
    summary["stages"] = {**stages, "core (rows, transaction)": total - sum(stages.values())}
    return summary


def tables_phase(root: str) -> dict:
    """The rebuild with no indexer and no hook configured: the files → the tables of the book
    (chapters, volumes, threads, secrets, entities + aliases, documents, timelines, fingerprints)
    in one transaction — what the rebuilder itself costs, measured, not subtracted."""
    from django.test import override_settings

    from bookfiles.rebuilder import book_rebuild

    with override_settings(WEBNOVEL_CHAPTER_INDEXERS=[], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        return report_summary(book_rebuild(root=Path(root)))


def import_phase(source: str, out: str) -> dict:
    """Turn a plain-text novel into a book folder with the ``import_txt`` command (its JSON report)."""
    import io
    import json

    from django.core.management import call_command

    buf = io.StringIO()
    call_command("import_txt", source, out, "--json", stdout=buf)
    report = json.loads(buf.getvalue())
    return {k: report.get(k) for k in ("title", "encoding", "chapters", "characters")}


def report_summary(report: dict) -> dict:
    """Keep a rebuild report small: scalars as they are, lists as their length plus the first codes."""
    summary: dict = {}
    for key, value in (report or {}).items():
        if isinstance(value, list):
            summary[key] = len(value)
            codes = [v.get("code") for v in value[:200] if isinstance(v, dict) and "code" in v]
            if codes:
                summary[f"{key}_codes"] = sorted(set(codes))
        elif isinstance(value, dict):
            summary[key] = {k: v for k, v in value.items() if isinstance(v, int | float | str | bool | None)}
        else:
            summary[key] = value
    return summary


def journal_write(root: Path, chapters: int) -> int:
    """Give ``root`` a journal of one extraction ingested per chapter, laid out as ``journal_append``
    writes it (``extractions/<chapter>-<seq>.json`` + an ``extraction.ingest`` line carrying the payload): a new name, an
    appearance of the chapter's first recurring name, a scene and the chapter's meta. Returns the events."""
    import json

    folder = root / ".journal"
    (folder / "extractions").mkdir(parents=True, exist_ok=True)
    lines = []
    for seq, chapter in enumerate(range(1, chapters + 1), start=1):
        payload = {
            "entities_new": [
                {"name": f"过客{chapter}号", "type": "角色", "aliases": [f"过客{chapter}"], "confidence": 0.9}
            ],
            "state_changes": [],
            "relationships_new": [],
            "scenes": [
                {"index": 1, "location": "山门", "summary": f"第{chapter}章的过客", "characters": [f"过客{chapter}号"]}
            ],
            "chapter_meta": {"title": f"第{chapter}章", "summary": f"过客{chapter}号来到山门"},
        }
        payload = json.loads(json.dumps(payload, sort_keys=True))  # as the writer keeps it: keys sorted
        name = f"extractions/{chapter:04d}-{seq:06d}.json"
        (folder / name).write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        event = {"seq": seq, "op": "extraction.ingest", "file": name, "chapter": chapter, "data": payload}
        lines.append(json.dumps(event, ensure_ascii=False, separators=(", ", ": ")) + "\n")
    (folder / "log.jsonl").write_text("".join(lines), encoding="utf-8")
    return len(lines)


def journal_measure(bench: Bench, chapters: int) -> dict:
    """The cold rebuild of the book with a journal of one extraction per chapter vs without it."""
    import shutil

    src = synthetic_book(chapters)
    plain = bench.workdir() / f"plain-{chapters}"
    shutil.copytree(src, plain, ignore=shutil.ignore_patterns(".complete", ".journal"))
    journaled = bench.workdir() / f"journaled-{chapters}"
    shutil.copytree(src, journaled, ignore=shutil.ignore_patterns(".complete", ".journal"))
    events = journal_write(journaled, chapters)
    page_cache_warm(plain)
    page_cache_warm(journaled)
    bench.log(f"journal {chapters}: rebuild without the journal (cold)")
    without = phase_run(
        "bench.bench_rebuild:rebuild_phase", {"root": str(plain)}, db=bench.database(label=f"jp-{chapters}")
    )
    bench.log(f"journal {chapters}: without {without['seconds']:.2f}s; with {events} extractions (cold)")
    with_ = phase_run(
        "bench.bench_rebuild:rebuild_phase", {"root": str(journaled)}, db=bench.database(label=f"jj-{chapters}")
    )
    bench.log(f"journal {chapters}: with {with_['seconds']:.2f}s")
    return {"chapters": chapters, "events": events, "without": without, "with": with_}


# --- the benchmark ----------------------------------------------------------------------------------


def case_measure(bench: Bench, label: str, root: Path) -> dict:
    size = book_size(root)
    page_cache_warm(root)
    db = bench.database(label=f"db-{label}")
    bench.log(f"{label}: floor (book_read) ×2")
    floors = [phase_run("bench.bench_rebuild:floor_phase", {"root": str(root)}, db=db) for _ in range(2)]
    floor = min(floors, key=lambda r: r["seconds"])
    chapters = floor["result"]["chapters"]
    bench.log(f"{label}: {chapters} chapters, {size['bytes'] / 1e6:.1f} MB; floor {floor['seconds']:.2f}s; rebuild")
    profile = bench.profile_path(f"rebuild-{root.name}")
    first = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db, profile=profile)
    bench.profile_report(profile)
    bench.log(f"{label}: rebuild {first['seconds']:.2f}s, peak {first['peak_rss_mb']:.0f} MB; rebuild again")
    again = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"{label}: rebuild again {again['seconds']:.2f}s; tables only (no indexer, no hook), cold")
    tables = phase_run("bench.bench_rebuild:tables_phase", {"root": str(root)}, db=bench.database(label=f"t-{label}"))
    bench.log(f"{label}: tables only {tables['seconds']:.2f}s")
    mb = size["bytes"] / 1e6
    return {
        "label": label,
        "chapters": chapters,
        "files": size["files"],
        "mb": mb,
        "floor": floor,
        "rebuild": first,
        "rebuild_again": again,
        "tables": tables,
        "floor_issues": floor["result"],
        "report": first["result"],
    }


def base_compare(bench: Bench, base: Path, root: Path, rounds: int) -> list[dict]:
    """This tree beside ``base`` (another checkout) on the same book, phase by phase alternating
    (base, this, base, this, …: a loaded machine drifts, alternation spreads the drift over both):
    the floor, the cold rebuild and the tables-only rebuild, each in a fresh process on a fresh
    database. Returns one row per (tree, phase) with the CPU seconds of each round and their median."""
    page_cache_warm(root)
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    phases = [("floor", "floor_phase"), ("rebuild", "rebuild_phase"), ("tables", "tables_phase")]
    for i in range(rounds):
        for phase, fn in phases:
            for label, tree in (("base", base), ("new", REPO)):
                db = bench.database(label=f"cmp-{label}-{phase}-{i}")
                r = phase_run(f"bench.bench_rebuild:{fn}", {"root": str(root)}, db=db, tree=tree)
                cpu.setdefault((label, phase), []).append(r["cpu_seconds"])
                wall.setdefault((label, phase), []).append(r["seconds"])
                bench.log(f"round {i + 1} {phase} {label}: cpu {r['cpu_seconds']:.2f}s wall {r['seconds']:.2f}s")
    rows = []
    for label in ("base", "new"):
        floor = statistics.median(cpu[(label, "floor")])
        for phase, _ in phases:
            values = cpu[(label, phase)]
            rows.append(
                {
                    "tree": label,
                    "phase": phase,
                    "cpu s (each round)": " ".join(f"{v:.2f}" for v in values),
                    "cpu s median": statistics.median(values),
                    "wall s median": statistics.median(wall[(label, phase)]),
                    "× floor cpu": statistics.median(values) / floor if floor else None,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    bench = Bench("rebuild", description=__doc__, argv=argv)
    bench.parser.add_argument(
        "--chapters", default=None, help="comma-separated synthetic sizes (default 300,3000; --quick: 300)"
    )
    bench.parser.add_argument("--no-xiyouji", action="store_true", help="skip the 西游记 case")
    bench.parser.add_argument(
        "--journal-chapters",
        type=int,
        default=None,
        help="chapters of the journal case (an extraction per chapter; default 3000, --quick 300; 0 skips it)",
    )
    bench.parser.add_argument(
        "--base", default=None, help="another checkout to measure beside this one, alternating (e.g. /tmp/base)"
    )
    bench.parser.add_argument("--rounds", type=int, default=3, help="rounds of the --base comparison (default 3)")
    args = bench.args
    if args.base:
        n = int((args.chapters or "3000").split(",")[0])
        rows = base_compare(bench, Path(args.base).resolve(), synthetic_book(n), args.rounds)
        bench.table(f"This tree vs --base {args.base}, {n:,} chapters, alternating, CPU seconds", rows)
        return bench.finish()
    sizes = [int(s) for s in (args.chapters or ("300" if args.quick else "300,3000")).split(",") if s]

    cases = []
    if not args.no_xiyouji:
        if XIYOUJI.exists():
            book_dir = bench.workdir() / "xiyouji"
            bench.log("西游记: import_txt")
            imported = bench.attempt(
                "西游记 import_txt",
                lambda: phase_run(
                    "bench.bench_rebuild:import_phase",
                    {"source": str(XIYOUJI), "out": str(book_dir)},
                    db=bench.database(label="db-import"),
                ),
            )
            if imported:
                bench.extra["xiyouji_import"] = {"seconds": imported["seconds"], "result": imported["result"]}
                cases.append(bench.attempt("西游记", lambda: case_measure(bench, "西游记", book_dir)))
        else:
            bench.note(f"西游记 skipped: {XIYOUJI} not found")
    for n in sizes:
        bench.log(f"synthetic {n}: generate (cached under bench/out/books/)")
        label = f"合成 {n:,} 章"
        cases.append(bench.attempt(label, lambda n=n, label=label: case_measure(bench, label, synthetic_book(n))))
    cases = [c for c in cases if c]

    rows = []
    for c in cases:
        r, a, f = c["rebuild"], c["rebuild_again"], c["floor"]
        ratio = r["seconds"] / f["seconds"] if f["seconds"] else None
        t = c["tables"]
        is_goal_case = c["chapters"] >= GOAL_CHAPTERS
        rows.append(
            {
                "case": c["label"],
                "chapters": c["chapters"],
                "MB": c["mb"],
                "floor s": f["seconds"],
                "rebuild s": r["seconds"],
                "again s": a["seconds"],
                "×floor": ratio,
                "rebuild cpu s": r["cpu_seconds"],
                "×floor cpu": r["cpu_seconds"] / f["cpu_seconds"] if f["cpu_seconds"] else None,
                "tables only s": t["seconds"],
                "tables ×floor": t["seconds"] / f["seconds"] if f["seconds"] else None,
                "tables cpu ×floor cpu": t["cpu_seconds"] / f["cpu_seconds"] if f["cpu_seconds"] else None,
                "ch/s": c["chapters"] / r["seconds"],
                "MB/s": c["mb"] / r["seconds"],
                "peak RSS MB": r["peak_rss_mb"],
                "floor RSS MB": f["peak_rss_mb"],
                "goal": (
                    f"all ×{goal_mark(ratio, GOAL_RATIO)} tables ×{goal_mark(t['seconds'] / f['seconds'], GOAL_RATIO)} "
                    f"RSS {goal_mark(r['peak_rss_mb'], GOAL_RSS_MB)}"
                    if is_goal_case
                    else ""
                ),
            }
        )
    bench.table("Full rebuild vs floor (book_read), each phase in a fresh process", rows)
    issues = [
        {
            "case": c["label"],
            "floor errors": c["floor_issues"]["errors"],
            "floor warnings": c["floor_issues"]["warnings"],
            "rebuild report": ", ".join(f"{k}={v}" for k, v in c["report"].items() if not isinstance(v, dict)),
        }
        for c in cases
    ]
    bench.table("Issues", issues)
    stage_rows = []
    for c in cases:
        stages = c["rebuild"]["result"].get("stages") or {}
        total = c["rebuild"]["seconds"]
        for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
            stage_rows.append({"case": c["label"], "stage": name, "s": seconds, "share %": 100 * seconds / total})
    if stage_rows:
        bench.table("Where the (first) rebuild's time goes (timers around each stage, no profiler)", stage_rows)
    if cases:
        bench.note(
            f"Goals ({GOAL_CHAPTERS:,} chapters): rebuild ≤ {GOAL_RATIO:g}× floor, peak RSS ≤ {GOAL_RSS_MB:.0f} MB. "
            "'tables only' is the same cold rebuild with no chapter indexer and no after-chapter hook configured "
            "(WEBNOVEL_CHAPTER_INDEXERS / WEBNOVEL_AFTER_CHAPTER_HOOKS: search index, mention scan, memory), "
            "on its own fresh database: the rebuilder itself, files to the tables of the book. "
            f"Baseline RSS of a phase process (Python + Django, before the call): "
            f"{cases[0]['rebuild']['baseline_rss_mb']:.0f} MB."
        )
    bench.extra["cases"] = cases
    n = args.journal_chapters if args.journal_chapters is not None else (300 if args.quick else 3000)
    journal = bench.attempt(f"journal {n}", lambda: journal_measure(bench, n)) if n else None
    if journal:
        w, wo = journal["with"], journal["without"]
        ratio = w["seconds"] / wo["seconds"] if wo["seconds"] else None
        replayed = (w["result"].get("journal") or {}).get("extraction.ingest", 0)
        bench.table(
            "Rebuild replaying the journal (an extraction per chapter) vs without it, cold, fresh processes",
            [
                {
                    "chapters": journal["chapters"],
                    "events": journal["events"],
                    "replayed": replayed,
                    "without s": wo["seconds"],
                    "with s": w["seconds"],
                    "×without": ratio,
                    "cpu ×without": w["cpu_seconds"] / wo["cpu_seconds"] if wo["cpu_seconds"] else None,
                    "peak RSS MB": w["peak_rss_mb"],
                    "goal": f"×{goal_mark(ratio, GOAL_JOURNAL_RATIO)}",
                }
            ],
        )
        stages = w["result"].get("stages") or {}
        bench.table(
            "Where the journaled rebuild's time goes",
            [
                {"stage": k, "s": v, "share %": 100 * v / w["seconds"]}
                for k, v in sorted(stages.items(), key=lambda kv: -kv[1])
            ],
        )
        bench.extra["journal"] = journal
        if replayed != journal["events"]:
            bench.note(f"journal case: {replayed} of {journal['events']} events replayed")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
