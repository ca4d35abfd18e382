"""The continuity check (机检) on the 3,000-chapter synthetic book, against floors measured in the same run.

    python bench/bench_continuity.py [--quick] [--json] [--keep] [--repeat 20] [--chapters 3000]

Setup (not measured): rebuild the synthetic book into a fresh database. Then, each phase in a fresh
process (peak RSS is per phase):

- draft: a ~3,000-character draft (the book's last chapter, renumbered N+1) checked ``repeat`` times
  with ``draft_check`` in one warm process (the first call apart as "cold"), against the floor of
  just parsing the same draft (``draft_parse``). Goal: p95 ≤ 200 ms.
- range: ``chapters_check(start=1)`` over every finalized chapter, against the floor of reading and
  parsing the same files (``book_read``). Goals: ≤ 5× the floor, peak RSS ≤ 400 MB.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Bench, cpu_seconds, phase_run, stats, synthetic_book  # noqa: E402

GOAL_DRAFT_P95 = 0.200
GOAL_RANGE_RATIO = 5.0
GOAL_RSS_MB = 400


def rebuild_phase(root: str) -> dict:
    from bookfiles.rebuilder import book_rebuild

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
    from continuity.selectors import draft_check
    from continuity.text import draft_parse

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


def range_phase(root: str) -> dict:
    from continuity.selectors import chapters_check

    result = chapters_check(book=_book(root), start=1)
    return {"chapters": result["to"], "counts": result["counts"]}


def read_phase(root: str) -> dict:
    from bookfiles.parser import book_read

    parsed = book_read(Path(root))
    return {"chapters": len(parsed.chapters)}


def main() -> int:
    bench = Bench("continuity", description=__doc__)
    bench.parser.add_argument("--repeat", type=int, default=20, help="draft checks timed (default 20)")
    bench.parser.add_argument(
        "--chapters", type=int, default=None, help="size of the synthetic book (default 3000; --quick: 300)"
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
    ratio = ranged["seconds"] / floor["seconds"] if floor["seconds"] else float("nan")
    bench.table(
        f"机检 on the {n}-chapter synthetic book",
        [
            {
                "case": f"one draft ({d['chars']} chars), warm",
                "p50_ms": d["check"]["p50"] * 1000,
                "p95_ms": d["check"]["p95"] * 1000,
                "cold_ms": d["cold"] * 1000,
                "floor_p50_ms": d["parse"]["p50"] * 1000,
                "ratio": d["check"]["p50"] / d["parse"]["p50"],
                "peak_rss_mb": draft["peak_rss_mb"],
                "goal": f"p95 ≤ {GOAL_DRAFT_P95 * 1000:.0f} ms: {'ok' if d['check']['p95'] <= GOAL_DRAFT_P95 else 'MISSED'}",
            },
            {
                "case": f"--from 1 ({ranged['result']['chapters']} chapters)",
                "p50_ms": ranged["seconds"] * 1000,
                "p95_ms": None,
                "cold_ms": None,
                "floor_p50_ms": floor["seconds"] * 1000,
                "ratio": ratio,
                "peak_rss_mb": ranged["peak_rss_mb"],
                "goal": f"≤ {GOAL_RANGE_RATIO:.0f}× book_read, ≤ {GOAL_RSS_MB} MB: "
                + ("ok" if ratio <= GOAL_RANGE_RATIO and ranged["peak_rss_mb"] <= GOAL_RSS_MB else "MISSED"),
            },
        ],
    )
    bench.note(f"findings: draft {d['findings']}, range {ranged['result']['counts']}")
    bench.extra["details"] = {"setup": setup, "draft": draft, "range": ranged, "floor": floor}
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
