"""Run every ``bench/bench_*.py`` that exists, one after another (never in parallel: they measure time).

    python bench/run_all.py [--only rebuild,finalize] [--quick] [--json] [--out bench/out/results.json]

Flags after the script's own are passed to every benchmark (``--quick``, ``--json``, ``--keep``).
With ``--json``, the documents of all benchmarks are gathered into one (and written to ``--out``).
Exit status: the number of benchmarks that failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def scripts(only: list[str] | None) -> list[Path]:
    found = sorted(BENCH.glob("bench_*.py"))
    if only:
        found = [p for p in found if p.stem.removeprefix("bench_") in only or p.stem in only]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every bench/bench_*.py one after another.")
    parser.add_argument("--only", default="", help="comma-separated names, e.g. rebuild,finalize")
    parser.add_argument("--quick", action="store_true", help="pass --quick (small cases) to every benchmark")
    parser.add_argument("--json", action="store_true", help="gather the JSON output of every benchmark")
    parser.add_argument("--keep", action="store_true", help="pass --keep to every benchmark")
    parser.add_argument("--out", type=Path, default=None, help="with --json: also write the document here")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] or None
    passed = [flag for flag, on in (("--quick", args.quick), ("--json", args.json), ("--keep", args.keep)) if on]

    results, failures = {}, []
    for script in scripts(only):
        name = script.stem
        print(f"=== {name} {' '.join(passed)}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(script), *passed],
            cwd=BENCH.parent,
            stdout=subprocess.PIPE if args.json else None,
            text=True,
        )
        seconds = time.perf_counter() - start
        print(f"=== {name}: exit {proc.returncode} in {seconds:.0f}s", file=sys.stderr, flush=True)
        if proc.returncode != 0:
            failures.append(name)
        if args.json:
            try:
                results[name] = json.loads(proc.stdout) if proc.stdout.strip() else None
            except json.JSONDecodeError:
                results[name] = {"unparsed_output": proc.stdout[-4000:]}
    if args.json:
        doc = json.dumps({"results": results, "failed": failures}, ensure_ascii=False, indent=2)
        print(doc)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(doc + "\n", encoding="utf-8")
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
    return len(failures)


if __name__ == "__main__":
    sys.exit(main())
