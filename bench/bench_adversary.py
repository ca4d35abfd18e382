"""Replay the hostile inputs of issue 19 and print, per case, the answer and whether the database and the
folder are unchanged.

    python bench/bench_adversary.py [--json] [--keep] [--only NAME,NAME]      # DATABASE_URL=… for PostgreSQL

Book side (``bench/adversary_books.py``): each case builds a small valid book in a temp folder, rebuilds it,
ingests one extraction, plants one hostile change (an empty folder claiming the slug, a chapter linked to
``/etc/passwd``, a FIFO, ``!!set``, ``.nan``, a 64-bit chapter number, a planted symlink under
``.story-system``, a deleted END marker…) and runs the command an author or agent would run on it (rebuild,
sync, finalize, import_txt, import_references, story_system --persist). The answer is ``rc 0``, ``rc 1`` (a
``CommandError``: the first issue line of the report, or the message), ``CRASH <exception>`` or ``HANG``.

Request side (``bench/adversary_bodies.py``, h2's): imported when present; its replay function is called with
a Django test client on the demo book, and its per-case answers are printed as they come. Absent, the run
says so and the book side alone decides the exit status.

A case FAILS when it crashes or hangs, when a refused input changed the database, or when anything under the
case's folder (the book and a folder outside it holding a decoy ``victim.py``) changed — import_txt's own
output folder excepted. The database named by ``DATABASE_URL`` is **flushed**.
"""

from __future__ import annotations

import inspect
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Bench, django_setup  # noqa: E402


def verdict(row: dict[str, Any]) -> str:
    if row["answer"] not in ("rc 0", "rc 1"):
        return "FAIL"
    if row["expect_unchanged"] and not row["db_unchanged"]:
        return "FAIL"
    if not row["folder_unchanged"] and row["operation"] != "import_txt":
        return "FAIL"
    return "ok"


def yes(flag: bool, *, expected: bool = True) -> str:
    if flag:
        return "yes"
    return "no" if expected else "no (expected)"


def books_run(bench: Bench, only: set[str]) -> list[dict[str, Any]]:
    from bench.adversary_books import CASES, case_run

    rows = []
    for case in CASES:
        if only and case.name not in only:
            continue
        started = time.perf_counter()
        result = case_run(case, bench.workdir() / case.name)
        result["seconds"] = round(time.perf_counter() - started, 2)
        result["verdict"] = verdict(result)
        bench.log(f"{case.name}: {result['answer']} {result['verdict']}")
        rows.append(result)
    bench.table(
        "hostile book folders (bench/adversary_books.py)",
        [
            {
                "case": r["case"],
                "operation": r["operation"],
                "answer": r["answer"],
                "first line of the message": r["message"][:90],
                "db unchanged": yes(r["db_unchanged"], expected=r["expect_unchanged"]),
                "folder unchanged": yes(r["folder_unchanged"], expected=r["operation"] != "import_txt"),
                "verdict": r["verdict"],
            }
            for r in rows
        ],
    )
    failed = [r["case"] for r in rows if r["verdict"] != "ok"]
    bench.failures += failed
    bench.note(f"book cases: {len(rows)}, failed: {len(failed)}{' (' + ', '.join(failed) + ')' if failed else ''}")
    bench.extra["book_cases"] = rows
    return rows


def import_report_size(bench: Bench) -> None:
    """Issue 19 item 5 in figures: the size of import_txt's JSON report and the time it takes for a
    heading far past the others (it allocated a range up to that number: 37 MB, or 23.8 GB and OOM)."""
    import io
    import resource

    from django.core.management import CommandError, call_command

    rows = []
    for number in (3_000_000, 10_000_000, 9_223_372_036_854_775_808):
        source = bench.workdir() / f"gap-{number}.txt"
        source.write_text(f"第1章 起\n一\n第{number}章 终\n二\n", encoding="utf-8")
        out = io.StringIO()
        started = time.perf_counter()
        try:
            call_command("import_txt", str(source), str(bench.workdir() / "gap-out"), "--json", "--dry-run", stdout=out)
            answer = "rc 0"
        except CommandError as exc:
            answer = f"rc 1: {str(exc).split('：', 1)[-1][:60]}"
        rows.append(
            {
                "heading": f"第{number}章",
                "answer": answer,
                "report bytes": len(out.getvalue().encode("utf-8")),
                "seconds": round(time.perf_counter() - started, 3),
                "peak RSS of the run (MB)": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    bench.table("import_txt --json --dry-run with one far heading", rows)


def bodies_run(bench: Bench) -> None:
    """h2's request-body cases, through whatever replay function bench/adversary_bodies.py offers."""
    try:
        import bench.adversary_bodies as bodies
    except ImportError as exc:
        bench.note(f"request bodies: bench/adversary_bodies.py not importable on this tree ({exc}); skipped")
        return
    cases = getattr(bodies, "REQUEST_CASES", None)
    replays = [getattr(bodies, n) for n in dir(bodies) if "replay" in n.lower() and callable(getattr(bodies, n))]
    if cases is None or not replays:
        bench.note("request bodies: bench/adversary_bodies.py has no REQUEST_CASES / replay function; skipped")
        return
    from django.test import Client

    from tests.conftest import DEMO_BOOK
    from webnovel.rebuilder import book_rebuild
    from webnovel.services import apikey_create

    book_rebuild(root=DEMO_BOOK, replace=True)
    _, key = apikey_create(name="adversary", scope="write", book=None)
    offered = {"client": Client(HTTP_X_API_KEY=key), "api_key": key, "key": key, "cases": cases, "book": "demo-book"}
    replay = replays[0]
    params = inspect.signature(replay).parameters
    kwargs = {name: offered[name] for name in params if name in offered}
    positional = [] if kwargs else [offered["client"]]
    try:
        results = replay(*positional, **kwargs)
    except Exception as exc:  # noqa: BLE001 - another module's interface: report, do not crash the run
        bench.note(f"request bodies: {replay.__name__} raised {type(exc).__name__}: {exc}")
        bench.failures.append("request bodies")
        return
    rows = [r if isinstance(r, dict) else {"result": r} for r in (results or [])]
    bench.table(f"hostile request bodies (bench/adversary_bodies.py, {replay.__name__})", rows)
    bench.extra["body_cases"] = rows
    bench.note(f"request body cases: {len(rows)} of {len(cases)} listed")


def main() -> int:
    bench = Bench("adversary", description=__doc__)
    bench.parser.add_argument("--only", default="", help="comma-separated book case names")
    bench.parser.add_argument("--no-bodies", action="store_true", help="skip bench/adversary_bodies.py")
    db = bench.database()
    django_setup(db)
    only = {n for n in bench.args.only.split(",") if n}
    books_run(bench, only)
    if not only:
        import_report_size(bench)
    if not bench.args.no_bodies and not only:
        bodies_run(bench)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
