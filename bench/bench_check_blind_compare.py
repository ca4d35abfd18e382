"""The blind planted sets (``bench_check_blind.py``) with two engines in one run: the code of a commit
(``--before``, a detached git worktree in the run's folder, given this tree's set modules when it lacks
them — the sets are data) and this tree, each set in a fresh process of each.

    python bench/bench_check_blind_compare.py [--before main] [--sets shuihu,shuihu2,shuihu3] [--json]

One row per set and engine: recall, precision of errors + warnings in the planted drafts (and without
``quote_style``), controls that were not silent, the clean book's warnings / infos per 10,000 characters
(with the set's cast, and with more of the real cast declared)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench  # noqa: E402

SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))


def _run(tree: Path, name: str) -> dict:
    done = subprocess.run(
        [sys.executable, "bench/bench_check_blind.py", "--set", name, "--json"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        # the corpus is found beside this tree (the worktree of --before lives in a temporary folder)
        env={**os.environ, "WEBNOVEL_SHARED": str(SHARED)},
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{tree} {name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _row(doc: dict, *, name: str, engine: str) -> dict:
    tables = {t["title"]: t["rows"] for t in doc["tables"]}
    clean = {r["book"].split()[-1]: r for r in tables["clean book (each chapter against its own N−1)"]}
    recall = next(r for r in tables["planted: recall per kind"] if r["kind"] == "ALL")
    kinds = [r for r in tables["planted: recall per kind"] if r["kind"] != "ALL"]
    precision = tables["planted: precision of errors + warnings, controls"][0]
    noisy_quotes = sum(1 for n in doc["notes"] if n.startswith("not a plant:") and " quote_style:" in n)
    # the loud findings that were quote_style plants (older benches do not say: every quote_style finding
    # was a warning then, so the plants found)
    by_kind = doc.get("loud_right_by_kind")
    quote_plants = next((r for r in kinds if r["kind"] == "quote_style"), None)
    if by_kind is not None:
        loud_quotes_right = by_kind.get("quote_style", 0)
    else:
        loud_quotes_right = quote_plants["found"] if quote_plants is not None else 0
    loud_wo = precision["loud"] - noisy_quotes - loud_quotes_right
    right_wo = precision["right"] - loud_quotes_right
    return {
        "set": name,
        "engine": engine,
        "recall": f"{recall['found']}/{recall['planted']} = {recall['recall']:.2f}",
        "min kind": min((f"{r['recall']:.2f} {r['kind']}" for r in kinds), default=""),
        "precision": f"{precision['right']}/{precision['loud']} = {precision['precision']:.2f}",
        "w/o quote_style": f"{right_wo}/{loud_wo} = {right_wo / loud_wo:.2f}" if loud_wo > 0 else "-",
        "loud controls": f"{precision['loud_controls']}/{precision['controls']}",
        "clean w / i per 10k": f"{clean['cast']['warnings_per_10k']:.2f} / {clean['cast']['infos_per_10k']:.2f}",
        "more cast w / i": f"{clean['more-cast']['warnings_per_10k']:.2f} / {clean['more-cast']['infos_per_10k']:.2f}",
    }


def main() -> int:
    bench = Bench("check-blind-compare", description=__doc__)
    bench.parser.add_argument("--before", default="main", help="the commit of the old engine (default main)")
    bench.parser.add_argument("--sets", default="shuihu,shuihu2,shuihu3", help="comma-separated set modules")
    args = bench.args
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    tree = bench.workdir() / "before"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), args.before], cwd=REPO, check=True, capture_output=True
    )
    rows, docs = [], {}
    try:
        for name in names:
            # the set's module and its own text beside it (a set written for the repository: qingya.txt)
            for data in (Path("bench/check_sets") / f"{name}.py", Path("bench/check_sets") / f"{name}.txt"):
                if (REPO / data).exists() and not (tree / data).exists():
                    shutil.copy(REPO / data, tree / data)
                    bench.note(f"{args.before} lacks {data}: this tree's copy was used (data only)")
        for name in names:
            for engine, where in ((args.before, tree), ("this tree", REPO)):
                bench.log(f"{name}: {engine}")
                docs[(name, engine)] = doc = _run(where, name)
                rows.append(_row(doc, name=name, engine=engine))
                bench.note(f"{name} {engine}: {doc.get('machine', '')}")
                for note in doc["notes"]:
                    if note.startswith(("missed:", "control not silent:")) or "clean by kind" in note:
                        bench.note(f"{name} {engine}: {note}")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)
    bench.table("blind sets: old engine vs new, one run", rows)
    bench.extra["runs"] = {f"{n} {e}": d for (n, e), d in docs.items()}
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
