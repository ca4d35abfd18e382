"""The continuity check (机检) on the 3,000-chapter synthetic book, against floors measured in the same run.

    python bench/bench_continuity.py [--quick] [--json] [--keep] [--repeat 20] [--chapters 3000] [--before REF]

Setup (not measured): rebuild the synthetic book into a fresh database. Then, each phase in a fresh
process (peak RSS is per phase):

- draft: a ~3,000-character draft (the book's last chapter, renumbered N+1) checked ``repeat`` times
  with ``draft_check`` in one warm process (the first call apart as "cold"), against the floor of
  just parsing the same draft (``draft_parse``). Goal: p95 ≤ 200 ms.
- range: ``chapters_check(start=1)`` over every finalized chapter, against the floor of reading and
  parsing the same files (``book_read``). Goals: ≤ 5× the floor, peak RSS ≤ 400 MB. The ratio is
  given over wall time (the goal's) and over CPU time (``cpu_ratio``: steadier when other processes
  share the cores).
- growth: one draft repeating a realm line (林风突破到筑基初期，又跌回炼气一层，再到金丹。) checked at 25k and at
  199k characters, CPU seconds. Goal: the larger within 12× of the smaller (issue 25 C1).

``--before REF`` (a commit, e.g. ``main``) also runs the draft and range phases with the code of REF
(a detached git worktree in the run's folder) on the same database and book, in the same run: the
before / after rows compare against the same floor.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, PhaseError, cpu_seconds, phase_run, stats, synthetic_book  # noqa: E402

GOAL_DRAFT_P95 = 0.200
GOAL_RANGE_RATIO = 5.0
GOAL_RSS_MB = 400


def rebuild_phase(root: str) -> dict:
    from django.test import override_settings

    from bookfiles.rebuilder import book_rebuild

    # the setup is not measured, and the check reads no derived memory: the after-commit hooks
    # (memory derivation, embeddings — tens of minutes on 3,000 chapters) are left out
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        report = book_rebuild(root=Path(root))
    return {"ok": report["ok"], "errors": len(report["errors"])}


def _book(root: str):
    from core.models import Book

    return Book.objects.get(root=str(Path(root).resolve()))


def _draft_text(book) -> tuple[str, int]:
    from core.models import Chapter

    last = Chapter.objects.filter(book=book).order_by("-number").first()
    text = (Path(book.root) / last.source_path).read_text(encoding="utf-8")
    return text, last.number + 1


def draft_phase(root: str, repeat: int) -> dict:
    from continuity.draft import draft_parse
    from continuity.selectors import draft_check

    book = _book(root)
    text, number = _draft_text(book)
    parse, check, cpu, findings = [], [], [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        draft_parse(text)
        parse.append(time.perf_counter() - start)
    for _ in range(repeat + 1):
        c0, start = cpu_seconds(), time.perf_counter()
        result = draft_check(book=book, text=text, chapter=number)
        check.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - c0)
        findings = len(result["findings"])
    return {
        "chars": len(text),
        "parse": stats(parse),
        "cold": check[0],
        "check": stats(check[1:]),
        "check_cpu": stats(cpu[1:]),
        "findings": findings,
    }


GROWTH_LINE = "林风突破到筑基初期，又跌回炼气一层，再到金丹。"
GROWTH_SIZES = (25_000, 199_000)
GOAL_GROWTH = 12.0


def growth_phase(root: str) -> dict:
    """CPU seconds of one draft check of a draft repeating one realm line at 25k and at 199k characters
    (issue 25 C1: quadratic before; the goal is within 12× for 8× the text)."""
    from continuity.selectors import draft_check

    book = _book(root)
    _, number = _draft_text(book)
    out = {}
    for size in GROWTH_SIZES:
        text = f"---\nchapter: {number}\n---\n" + GROWTH_LINE * (size // len(GROWTH_LINE))
        draft_check(book=book, text=text[:2000], chapter=number)  # warm: the canon's caches
        c0 = cpu_seconds()
        result = draft_check(book=book, text=text, chapter=number)
        out[str(size)] = {"cpu_seconds": cpu_seconds() - c0, "findings": len(result["findings"])}
    return out


def range_phase(root: str) -> dict:
    from continuity.selectors import chapters_check

    result = chapters_check(book=_book(root), start=1)
    return {"chapters": result["to"], "counts": result["counts"]}


def read_phase(root: str) -> dict:
    from bookfiles.parser import book_read

    parsed = book_read(Path(root))
    return {"chapters": len(parsed.chapters)}


def phase_run_at(tree: Path, target: str, kwargs: dict, *, db: str) -> dict:
    """``phase_run`` with the code of another checkout (``tree``): its own bench.common runs the phase."""
    with tempfile.NamedTemporaryFile(prefix="wn-phase-", suffix=".json", delete=False) as f:
        out = Path(f.name)
    try:
        cmd = [sys.executable, "-m", "bench.common", "--phase", target, "--kwargs", json.dumps(kwargs)]
        proc = subprocess.run([*cmd, "--db", db, "--out", str(out)], cwd=tree, capture_output=True, text=True)
        if proc.returncode != 0:
            raise PhaseError(f"phase {target} at {tree} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)


def _rows(label: str, draft: dict, ranged: dict, floor: dict, n: int) -> list[dict]:
    d = draft["result"]
    ratio = ranged["seconds"] / floor["seconds"] if floor["seconds"] else float("nan")
    # CPU seconds too: on a shared machine the wall clock waits for other processes, CPU time much less
    cpu_ratio = ranged["cpu_seconds"] / floor["cpu_seconds"] if floor.get("cpu_seconds") else float("nan")
    return [
        {
            "code": label,
            "case": f"one draft ({d['chars']} chars), warm",
            "p50_ms": d["check"]["p50"] * 1000,
            "p95_ms": d["check"]["p95"] * 1000,
            "cold_ms": d["cold"] * 1000,
            "floor_p50_ms": d["parse"]["p50"] * 1000,
            "ratio": d["check"]["p50"] / d["parse"]["p50"],
            "cpu_ratio": None,
            "peak_rss_mb": draft["peak_rss_mb"],
            "goal": f"p95 ≤ {GOAL_DRAFT_P95 * 1000:.0f} ms: {'ok' if d['check']['p95'] <= GOAL_DRAFT_P95 else 'MISSED'}",
        },
        {
            "code": label,
            "case": f"--from 1 ({ranged['result']['chapters']} chapters)",
            "p50_ms": ranged["seconds"] * 1000,
            "p95_ms": None,
            "cold_ms": None,
            "floor_p50_ms": floor["seconds"] * 1000,
            "ratio": ratio,
            "cpu_ratio": cpu_ratio,
            "peak_rss_mb": ranged["peak_rss_mb"],
            "goal": f"≤ {GOAL_RANGE_RATIO:.0f}× book_read, ≤ {GOAL_RSS_MB} MB: "
            + ("ok" if ratio <= GOAL_RANGE_RATIO and ranged["peak_rss_mb"] <= GOAL_RSS_MB else "MISSED"),
        },
    ]


def main() -> int:
    bench = Bench("continuity", description=__doc__)
    bench.parser.add_argument("--repeat", type=int, default=20, help="draft checks timed (default 20)")
    bench.parser.add_argument(
        "--chapters", type=int, default=None, help="size of the synthetic book (default 3000; --quick: 300)"
    )
    bench.parser.add_argument(
        "--before", default=None, help="also run the phases with the code of this commit (e.g. main)"
    )
    args = bench.args
    n = args.chapters or (300 if args.quick else 3000)
    root = synthetic_book(n)
    db = bench.database(label=f"db{n}")
    bench.log(f"{n} chapters: rebuild (setup)")
    setup = phase_run("bench.bench_continuity:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"rebuilt in {setup['seconds']:.1f}s; draft ×{args.repeat + 1}")
    draft = phase_run("bench.bench_continuity:draft_phase", {"root": str(root), "repeat": args.repeat}, db=db)
    d = draft["result"]
    bench.log("range --from 1")
    ranged = phase_run("bench.bench_continuity:range_phase", {"root": str(root)}, db=db)
    floor = phase_run("bench.bench_continuity:read_phase", {"root": str(root)}, db=db)
    rows = _rows("this tree", draft, ranged, floor, n)
    bench.log("growth: one realm line repeated to 25k and 199k characters, on the demo book (林风, a ladder)")
    demo = shutil.copytree(REPO / "examples" / "demo-book", bench.workdir() / "demo-book", dirs_exist_ok=True)
    phase_run("bench.bench_continuity:rebuild_phase", {"root": str(demo)}, db=db)
    growth = phase_run("bench.bench_continuity:growth_phase", {"root": str(demo)}, db=db)["result"]
    small, large = (growth[str(size)]["cpu_seconds"] for size in GROWTH_SIZES)
    ratio = large / small if small else float("nan")
    bench.note("growth findings: " + ", ".join(f"{k}: {v['findings']}" for k, v in growth.items()))
    bench.table(
        "机检 growth in draft length (CPU seconds, one check each)",
        [
            {
                "case": f"{GROWTH_SIZES[0]:,} → {GROWTH_SIZES[1]:,} chars",
                "small_s": small,
                "large_s": large,
                "ratio": ratio,
                "goal": f"≤ {GOAL_GROWTH:g}×: {'ok' if ratio <= GOAL_GROWTH else 'MISSED'}",
            }
        ],
    )
    bench.note(f"findings: draft {d['findings']}, range {ranged['result']['counts']}")
    bench.extra["details"] = {"setup": setup, "draft": draft, "range": ranged, "floor": floor}
    if args.before:
        tree = bench.workdir() / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), args.before], cwd=REPO, check=True, capture_output=True
        )
        try:
            bench.log(f"{args.before}: draft ×{args.repeat + 1}, range --from 1")
            old_draft = phase_run_at(
                tree, "bench.bench_continuity:draft_phase", {"root": str(root), "repeat": args.repeat}, db=db
            )
            old_range = phase_run_at(tree, "bench.bench_continuity:range_phase", {"root": str(root)}, db=db)
            old_floor = phase_run("bench.bench_continuity:read_phase", {"root": str(root)}, db=db)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)
        rows = _rows(args.before, old_draft, old_range, old_floor, n) + rows
        bench.note(
            f"findings at {args.before}: draft {old_draft['result']['findings']}, range {old_range['result']['counts']}"
        )
        bench.extra["before"] = {"ref": args.before, "draft": old_draft, "range": old_range, "floor": old_floor}
    bench.table(f"机检 on the {n}-chapter synthetic book", rows)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
