"""A real schemathesis run against the live API: gunicorn on a fresh migrated database holding the
demo book, every operation of ``/api/openapi.json`` called with an API key of write scope, all
checks on (no 5xx, documented status codes, content types and headers, response bodies that match
their schema, bad input refused, good input accepted…).

    python bench/bench_schemathesis.py [--quick] [--json] [--keep] [--max-examples 100]
        [--phases examples,coverage,fuzzing,stateful] [--seed 1] [--workers 2] [--max-time S]

``--quick`` is 10 examples per operation and phase; the default 100. The database is a fresh
SQLite file, or ``$DATABASE_URL`` (migrated and **flushed**). The demo book is copied into the
temporary folder first, because write operations (story-system builds) write into the book folder.

Printed: operations tested, calls made and their statuses (from the HAR report), failures by
check and operation, errors of schemathesis itself, 5xx answers, tracebacks in gunicorn's log, and
schemathesis' exit status; the exit status is 1 on any failure, error or 5xx. ``--keep`` keeps the
folder with the reports (JSON, NDJSON events, HAR of every call, ``st replay`` works from there).

schemathesis is pinned (``SCHEMATHESIS_VERSION``) in its own virtualenv, ``var/schemathesis-venv``
(git-ignored), which this script creates on first use: its releases pin other versions of our
dependencies, so it stays out of requirements.txt. The generated values are steered towards the
demo book's real names (``DICTIONARIES``: e.g. the path's book is ``demo-book`` 90 % of the time),
or nearly every call would stop at "书籍不存在". ``EXCLUDED`` lists the check / operation pairs
switched off, each with its reason.

``--hypothesis 5000,20`` also runs the in-process hypothesis fuzzers of tests/hardening with that
many API calls and 20× the parser properties' examples. ``--tool-python`` picks the interpreter of
a new tool virtualenv: on Python 3.11.7 schemathesis' coverage phase hits a CPython bug
(``SystemError: AST constructor recursion depth mismatch``) on one operation; 3.13 does not, so
python3.13 is the default when it is on the PATH.

Latest figures (2026-11-30, schemathesis 4.32.5 on Python 3.13, 100 examples, seed 1, 2 workers,
2 shared cores): 80/80 operations; SQLite 10,496 calls in 161 s, PostgreSQL 10,409 in 274 s; 0 5xx,
0 tracebacks, 0 failures, exit 0 (statuses in bench/README.md and docs/hardening.md §3).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_load import Server  # noqa: E402
from bench.common import REPO, Bench, phase_run  # noqa: E402

SCHEMATHESIS_VERSION = "4.32.5"
VENV = REPO / "var" / "schemathesis-venv"

# Real values of the demo book, bound to parameters by name with a probability (the rest of the
# time schemathesis generates its own values, hostile ones included).
DICTIONARIES: dict[str, tuple[list[Any], list[str], float]] = {
    "books": (["demo-book"], ["path.book"], 0.9),
    "chapters": (list(range(1, 25)), ["path.number", "path.chapter", "query.chapter", "query.as_of"], 0.6),
    "volumes": ([1, 2], ["path.volume", "query.volume"], 0.6),
    "names": (["林风", "苏婉儿", "linfeng", "青岚宗"], ["path.name", "path.ref", "query.alias", "query.name"], 0.6),
    "threads": (["伏笔-001", "伏笔-002", "悬念-001", "感情线-001"], ["path.thread_id"], 0.6),
    "secrets": (["信息差-001", "信息差-002"], ["path.secret_id"], 0.6),
    "queries": (["林风", "剑", "青岚宗 林风"], ["query.q"], 0.5),
    "tasks": (["write", "review", "query"], ["query.task"], 0.5),
}

# (check, method, path, why): precise exclusions of schemathesis findings that are not defects of
# the schema. positive_data_acceptance sends values the schema allows and expects a 2xx / 404 / 409;
# these operations rightly refuse some of them for reasons OpenAPI cannot state.
B = "/api/books/{book}"
EXCLUDED: list[tuple[str, str, str, str]] = [
    (
        "positive_data_acceptance", "GET", f"{B}/chapters/summaries",
        "start ≤ end and at most 500 chapters: a relation between two parameters",
    ),
    (
        "positive_data_acceptance", "GET", f"{B}/story-system/route",
        "q or genre is needed: one of two optional parameters",
    ),
    (
        "positive_data_acceptance", "POST", f"{B}/story-system/build",
        "query or genre is needed: one of two optional fields",
    ),
    (
        "positive_data_acceptance", "POST", f"{B}/entities/pending/{{pk}}/confirm",
        "an item already confirmed or rejected is refused with a 409: state, not shape",
    ),
    (
        "positive_data_acceptance", "POST", f"{B}/entities/pending/{{pk}}/reject",
        "an item already confirmed or rejected is refused with a 409: state, not shape",
    ),
    (
        "positive_data_acceptance", "POST", f"{B}/memory/import",
        "a memory file's buckets must be known categories holding fact items: the body is a free object",
    ),
]  # fmt: skip


def schemathesis_install(log, python: str = sys.executable) -> Path:
    """The ``st`` executable of the tool virtualenv, created with ``python`` (and schemathesis
    installed) if needed. An existing virtualenv is kept whatever its interpreter: delete it to change."""
    st = VENV / "bin" / "st"
    if st.exists():
        proc = subprocess.run([str(st), "--version"], capture_output=True, text=True)
        if proc.stdout.strip().endswith(SCHEMATHESIS_VERSION):
            return st
    log(f"installing schemathesis {SCHEMATHESIS_VERSION} into {VENV.relative_to(REPO)}")
    if not (VENV / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", f"schemathesis=={SCHEMATHESIS_VERSION}"],
        check=True,
    )
    return st


def demo_load(*, root: str) -> dict[str, Any]:
    """Phase: rebuild the demo book copy at ``root``, ingest its sample extractions, create a write key."""
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book
    from core.services import apikey_create
    from webnovel.demo import demo_extractions_ingest

    report = book_rebuild(root=Path(root))
    if not report["ok"]:
        raise RuntimeError(f"demo book rebuild failed: {report['errors']}")
    book = Book.objects.get(slug=report["book"])
    ingested = demo_extractions_ingest(book=book)
    _, raw = apikey_create(name="schemathesis", scope="write")
    return {"book": book.slug, "chapters": report["counts"]["chapters"], "extractions": len(ingested), "key": raw}


def _toml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string / number / list is valid TOML here


def config_write(path: Path) -> None:
    """schemathesis.toml: the dictionaries bound to parameters, and the exclusions."""
    lines = []
    for name, (values, _, _) in DICTIONARIES.items():
        lines.append(f"dictionaries.{name}.values = {_toml(values)}")
    # A URL too long for gunicorn (over 4094 bytes) is refused with 414, a rejection like the others.
    rejections = [400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 422, 428, 429]
    lines.append(f"checks.negative_data_rejection.expected-statuses = {_toml(rejections)}")
    lines.append("")
    lines.append("[parameters]")
    for name, (_, params, probability) in DICTIONARIES.items():
        for param in params:
            lines.append(f'"{param}" = {{ dictionary = "{name}", probability = {probability} }}')
    for check, method, op_path, _why in EXCLUDED:
        lines += ["", "[[operations]]", f"include-method = {_toml(method)}", f"include-path = {_toml(op_path)}"]
        lines.append(f"checks.{check}.enabled = false")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def har_tally(har: Path) -> tuple[Counter, list[dict[str, Any]]]:
    """Statuses of every call in the HAR report, and the 5xx calls themselves."""
    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    statuses = Counter(str(e["response"]["status"]) for e in entries)
    server_errors = [
        {
            "method": e["request"]["method"],
            "url": e["request"]["url"],
            "status": e["response"]["status"],
            "body": (e["response"].get("content", {}).get("text") or "")[:300],
        }
        for e in entries
        if e["response"]["status"] >= 500
    ]
    return statuses, server_errors


def hypothesis_run(*, calls: int, scale: int) -> dict[str, Any]:
    """The in-process hypothesis fuzzers of tests/hardening with many more examples than CI uses:
    ``calls`` API calls (test_openapi_fuzz.py) and ``scale``× the parser properties' examples."""
    tally_file = Path(tempfile.mkdtemp(prefix="wn-fuzz-")) / "tally.json"
    env = {
        **os.environ,
        "HARDENING_EXAMPLES": str(calls),
        "HARDENING_SCALE": str(scale),
        "HARDENING_TALLY": str(tally_file),
    }
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "tests/hardening/test_openapi_fuzz.py", "tests/hardening/test_fuzz_parsers.py",
        ],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    tally = json.loads(tally_file.read_text()) if tally_file.exists() else {}
    shutil.rmtree(tally_file.parent, ignore_errors=True)
    summary = [line for line in proc.stdout.splitlines() if " passed" in line or " failed" in line]
    if proc.returncode != 0:
        print(proc.stdout[-6000:], file=sys.stderr)
    return {
        "api calls": tally.get("calls"),
        "statuses": " · ".join(f"{k}: {v}" for k, v in sorted(tally.get("statuses", {}).items())),
        "parser examples (fast / slow)": f"{150 * scale} / {40 * scale}",
        "pytest": summary[-1] if summary else proc.stdout[-300:],
        "ok": proc.returncode == 0,
        "seconds": round(time.monotonic() - start, 1),
    }


def main() -> int:
    bench = Bench("schemathesis", description=__doc__)
    bench.parser.add_argument("--max-examples", type=int, default=100, help="test cases per operation and phase")
    bench.parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful", help="schemathesis phases")
    bench.parser.add_argument("--seed", type=int, default=1, help="schemathesis seed (reproducible runs)")
    bench.parser.add_argument("--workers", type=int, default=2, help="schemathesis workers = gunicorn workers")
    bench.parser.add_argument("--max-time", type=int, default=None, help="time budget of the run, seconds")
    bench.parser.add_argument(
        "--hypothesis",
        metavar="CALLS,SCALE",
        default=None,
        help="also run the in-process hypothesis fuzzers of tests/hardening, e.g. 5000,20",
    )
    bench.parser.add_argument(
        "--tool-python",
        default=os.environ.get("SCHEMATHESIS_PYTHON") or shutil.which("python3.13") or sys.executable,
        help="interpreter for a new tool virtualenv (default: $SCHEMATHESIS_PYTHON, else python3.13 when on the "
        "PATH, else this one)",
    )
    opts = bench.args
    if opts.quick:
        opts.max_examples = 10
    st = schemathesis_install(bench.log, opts.tool_python)
    workdir = bench.workdir()
    db = bench.database()
    root = workdir / "books" / "demo-book"
    shutil.copytree(REPO / "examples" / "demo-book", root)
    demo = phase_run("bench.bench_schemathesis:demo_load", {"root": str(root)}, db=db)["result"]
    bench.log(f"book {demo['book']}: {demo['chapters']} chapters, {demo['extractions']} extractions")
    config = workdir / "schemathesis.toml"
    config_write(config)
    reports = workdir / "report"
    server = Server(db, workers=opts.workers, log=workdir / "gunicorn.log", books_dir=root.parent)
    cmd = [
        str(st), "--config-file", str(config), "run", f"http://127.0.0.1:{server.port}/api/openapi.json",
        "--header", f"X-API-Key: {demo['key']}",
        "--max-examples", str(opts.max_examples),
        "--phases", opts.phases,
        "--seed", str(opts.seed),
        "--workers", str(opts.workers),
        "--continue-on-failure",
        "--generation-with-security-parameters", "false",  # the key header above authenticates
        "--report", "json,ndjson,har",
        "--report-dir", str(reports),
        "--no-color",
    ]  # fmt: skip
    if opts.max_time:
        cmd += ["--max-time", str(opts.max_time)]
    bench.log(" ".join(cmd).replace(demo["key"], "…"))
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    finally:
        server.stop()
    seconds = time.monotonic() - start
    (workdir / "st-output.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    report_files = {kind: sorted(glob.glob(str(reports / f"{kind}-*")))[-1:] for kind in ("json", "har")}
    if not report_files["json"] or not report_files["har"]:
        bench.log(f"schemathesis exited {proc.returncode} without reports:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
        bench.failures.append("schemathesis")
        return bench.finish()
    report = json.loads(Path(report_files["json"][0]).read_text(encoding="utf-8"))
    statuses, server_errors = har_tally(Path(report_files["har"][0]))
    tracebacks = (workdir / "gunicorn.log").read_text(errors="replace").count("Traceback")
    failures = [
        {"check": f["title"], "code": f.get("code"), "count": f["count"], "operations": f.get("operations", [])}
        for f in report.get("failures", [])
    ]
    errors = report.get("errors", [])
    ops = report["operations"]
    bench.table(
        f"schemathesis {report['schemathesis_version']} on {db.split(':', 1)[0]}, {opts.max_examples} examples, "
        f"phases {opts.phases}, seed {opts.seed}",
        [
            {
                "operations": f"{ops['tested']}/{ops['total']}",
                "test cases": report["test_cases"]["generated"],
                "calls": sum(statuses.values()),
                "5xx": len(server_errors),
                "tracebacks": tracebacks,
                "failures": sum(f["count"] for f in failures),
                "errors": sum(e.get("count", 1) for e in errors),
                "exit": proc.returncode,
                "seconds": round(seconds, 1),
            }
        ],
    )
    bench.table("statuses", [{"status": s, "calls": n} for s, n in sorted(statuses.items())])
    if failures:
        bench.table(
            "failures",
            [{"check": f["check"], "count": f["count"], "operations": len(f["operations"])} for f in failures],
        )
    for f in failures:
        bench.note(f"{f['check']} ({f['code']}): " + "; ".join(f["operations"]))
    for error in errors:
        bench.note(f"schemathesis error: {error}")
    for call in server_errors[:10]:
        bench.note(f"5xx: {call['status']} {call['method']} {call['url']} {call['body']}")
    for check, method, op_path, why in EXCLUDED:
        bench.note(f"excluded: {check} on {method} {op_path} ({why})")
    bench.extra.update(
        {
            "schemathesis_version": report["schemathesis_version"],
            "statuses": dict(sorted(statuses.items())),
            "failures": failures,
            "errors": errors,
            "server_errors": server_errors,
            "exit_code": proc.returncode,
        }
    )
    if proc.returncode != 0 or server_errors or tracebacks:
        bench.failures.append("schemathesis")
        tail = proc.stdout[proc.stdout.find("=== FAILURES") :] if "=== FAILURES" in proc.stdout else proc.stdout
        print(tail[-30000:], file=sys.stderr)
    if os.environ.get("DATABASE_URL"):
        bench.note("database: $DATABASE_URL (flushed)")
    if opts.hypothesis:
        calls, scale = (int(x) for x in opts.hypothesis.split(","))
        bench.log(f"hypothesis fuzzers: {calls} API calls, parser scale {scale}")
        row = hypothesis_run(calls=calls, scale=scale)
        bench.table("in-process hypothesis fuzzers (tests/hardening)", [row])
        if not row["ok"]:
            bench.failures.append("hypothesis")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
