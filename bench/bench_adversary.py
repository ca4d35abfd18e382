"""Replay the hostile inputs of issue 19 and print, per case, the answer and whether the database and the
folder are unchanged.

    python bench/bench_adversary.py [--json] [--keep] [--only NAME,NAME]      # DATABASE_URL=… for PostgreSQL

Book side (``bench/adversary_books.py``): each case builds a small valid book in a temp folder, rebuilds it,
ingests one extraction, plants one hostile change (an empty folder claiming the slug, a chapter linked to
``/etc/passwd``, a FIFO, ``!!set``, ``.nan``, a 64-bit chapter number, a planted symlink under
``.story-system``, a deleted END marker…) and runs the command an author or agent would run on it (rebuild,
sync, finalize, import_txt, import_references, story_system --persist). The answer is ``rc 0``, ``rc 1`` (a
``CommandError``: the first issue line of the report, or the message), ``CRASH <exception>`` or ``HANG``.

Request side (``bench/adversary_bodies.py``): its ``REQUEST_CASES`` are replayed with ``cases_replay`` through a
Django test client on the demo book (keys of each scope, one scoped to the demo book, a second book for the
cross-book cases); per case the status against the expected one, the message, and whether the database is
unchanged.

A case FAILS when it crashes or hangs, when a refused input changed the database, or when anything under the
case's folder (the book and a folder outside it holding a decoy ``victim.py``) changed — import_txt's own
output folder excepted. The database named by ``DATABASE_URL`` is **flushed**.
"""

from __future__ import annotations

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
    """The hostile request bodies of ``bench/adversary_bodies.py`` against the demo book (test client, keys
    of each scope and one scoped to the demo book, a second book for cross-book cases)."""
    import shutil
    import tempfile

    from django.test import Client

    from bench.adversary_bodies import REQUEST_CASES, cases_replay
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book
    from core.services import apikey_create
    from tests.conftest import DEMO_BOOK

    book_rebuild(root=DEMO_BOOK, replace=True)
    other = Path(tempfile.mkdtemp(prefix="wn-adversary-other-")) / "other"
    shutil.copytree(DEMO_BOOK, other)
    yaml_path = other / "book.yaml"
    yaml_path.write_text(
        yaml_path.read_text(encoding="utf-8").replace("slug: demo-book", "slug: other"), encoding="utf-8"
    )
    book_rebuild(root=other, replace=True)
    keys = {
        "write": apikey_create(name="adv-w", scope="write", book=None)[1],
        "read": apikey_create(name="adv-r", scope="read", book=None)[1],
        "scoped": apikey_create(name="adv-s", scope="write", book=Book.objects.get(slug="demo-book"))[1],
    }
    results = cases_replay(Client(), keys=keys, book="demo-book", other="other")
    rows = [
        {
            "case": r["name"],
            "request": f"{r['method']} {r['path']}"[:60],
            "status": r["status"],
            "expected": r["expect"],
            "message": (r.get("message") or "")[:60],
            "db unchanged": r["unchanged"] if not r["writes"] else f"{r['unchanged']} (a write)",
            "verdict": "ok" if r["ok"] and (r["unchanged"] or r["writes"]) else "FAIL",
        }
        for r in results
    ]
    bench.table("hostile request bodies (bench/adversary_bodies.py)", rows)
    bench.extra["body_cases"] = rows
    failed = [r["case"] for r in rows if r["verdict"] != "ok"]
    if failed:
        bench.failures.append(f"request bodies: {', '.join(failed)}")
    bench.note(f"request body cases: {len(rows)} of {len(REQUEST_CASES)} listed, failed: {len(failed)}")


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
