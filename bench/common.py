"""Shared helpers of the benchmark scripts: a throwaway database, phases in fresh subprocesses,
timing statistics, peak RSS, tables and ``--json`` output.

A benchmark script typically does::

    from bench.common import Bench, phase_run, stats, synthetic_book

    bench = Bench("rebuild", description=__doc__)          # parses --json / --quick / --keep
    db = bench.database()                                 # throwaway SQLite (or $DATABASE_URL), migrated
    root = synthetic_book(3000)                           # cached under bench/out/books/
    result = phase_run("bookfiles.rebuilder:book_rebuild", {"root": str(root)}, db=db)
    bench.row(case="3,000 章", seconds=result["seconds"], peak_rss_mb=result["peak_rss_mb"])
    bench.finish()                                        # prints the table, or JSON with --json

Why subprocesses: ``ru_maxrss`` is a high-water mark for the whole life of a process, so a peak
RSS figure only means something for one phase when that phase runs alone in a fresh interpreter
(which pays the same Django import cost every time: ``baseline_rss_mb`` shows it).

Phases are plain functions named ``"module:function"``; they get JSON keyword arguments and
return something JSON-able. A phase that needs the database ORM just uses it: the child has run
``django.setup()`` against the benchmark database before calling it.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable
from importlib import import_module
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"  # git-ignored: cached books, JSON results
BOOKS_CACHE = Path(os.environ.get("BENCH_BOOKS_DIR", OUT / "books"))

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# --- statistics -----------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between closest ranks (numpy's default)."""
    data = sorted(values)
    if not data:
        raise ValueError("percentile of no values")
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def stats(samples: Iterable[float]) -> dict[str, float]:
    """n / min / p50 / p95 / mean / max of a list of durations (seconds)."""
    data = list(samples)
    return {
        "n": len(data),
        "min": min(data),
        "p50": percentile(data, 50),
        "p95": percentile(data, 95),
        "mean": statistics.fmean(data),
        "max": max(data),
    }


def timeit(
    fn: Callable[[], Any],
    *,
    repeat: int = 20,
    warmup: int = 1,
    setup: Callable[[], Any] | None = None,
) -> dict[str, float]:
    """Call ``fn`` ``warmup`` + ``repeat`` times and return ``stats`` of the timed calls.

    ``setup`` runs before every call, outside the timed region (e.g. to write a fresh chapter)."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    samples = []
    for _ in range(repeat):
        if setup:
            setup()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return stats(samples)


class Timer:
    """``with Timer() as t: …`` then ``t.seconds``."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


# --- memory ---------------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (ru_maxrss is KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float:
    """Current resident set size in MB (Linux /proc; falls back to the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb()


# --- database and Django --------------------------------------------------------------------------


def database_url(workdir: Path) -> str:
    """``$DATABASE_URL`` when set (e.g. a PostgreSQL database reserved for benchmarks), else a
    fresh SQLite file in ``workdir``."""
    return os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'bench.sqlite3'}"


def pg_database_create(url: str, *, drop: bool = False) -> None:
    """Create the PostgreSQL database that ``url`` names when it does not exist (``drop``: drop it
    first if it does, for a run from an empty database), through the server's ``postgres`` database."""
    import dj_database_url
    import psycopg

    cfg = dj_database_url.parse(url)
    kwargs = {k: v for k, v in dict(host=cfg["HOST"], port=cfg["PORT"], user=cfg["USER"]).items() if v}
    with psycopg.connect(dbname="postgres", autocommit=True, **kwargs) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [cfg["NAME"]]).fetchone()
        if exists and drop:
            conn.execute("SET statement_timeout = '60s'")
            conn.execute(f'DROP DATABASE "{cfg["NAME"]}" WITH (FORCE)')
        if not exists or drop:
            conn.execute(f'CREATE DATABASE "{cfg["NAME"]}"')


def django_setup(db_url: str | None = None, *, migrate: bool = False) -> None:
    """Point Django at ``db_url`` (default: $DATABASE_URL or a throwaway SQLite file) and set it up."""
    if db_url:
        os.environ["DATABASE_URL"] = db_url
    elif not os.environ.get("DATABASE_URL"):
        folder = tempfile.mkdtemp(prefix="wn-bench-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a throwaway database is thrown away
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def database_flush() -> None:
    """Empty every table (keeps the schema): a clean slate between cases on a shared database."""
    from django.core.management import call_command

    call_command("flush", verbosity=0, interactive=False)


# --- phases in fresh subprocesses -----------------------------------------------------------------


class PhaseError(RuntimeError):
    """A phase's subprocess exited with an error (its stderr tail is the message)."""


def phase_run(
    target: str,
    kwargs: dict[str, Any] | None = None,
    *,
    db: str,
    timeout: float | None = None,
    profile: Path | None = None,
    tree: Path | None = None,
) -> dict:
    """Run ``module:function(**kwargs)`` in a fresh Python process set up against ``db`` (``tree``:
    in another checkout, with that tree's code and its own ``bench`` package, e.g. a base to compare).

    Returns ``{"seconds", "cpu_seconds", "peak_rss_mb", "baseline_rss_mb", "result"}``: the wall
    time of the call alone (not the interpreter start or ``django.setup()``), the CPU time (user +
    system) of the call, which a busy machine disturbs less than the wall time, the process's peak
    RSS, and its RSS just before the call (the cost of the interpreter + Django + imports). With ``profile``, the call
    runs under cProfile and the stats are written there (read them with ``profile_top``); the
    timing then includes cProfile's overhead."""
    with tempfile.NamedTemporaryFile(prefix="wn-phase-", suffix=".json", delete=False) as f:
        out = Path(f.name)
    try:
        cmd = [sys.executable, "-m", "bench.common", "--phase", target, "--kwargs", json.dumps(kwargs or {})]
        cmd += ["--db", db, "--out", str(out)]
        if profile:
            cmd += ["--profile", str(profile)]
        proc = subprocess.run(cmd, cwd=tree or REPO, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise PhaseError(f"phase {target} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        out.unlink(missing_ok=True)


def _phase_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Run one benchmark phase (used by phase_run).")
    parser.add_argument("--phase", required=True)
    parser.add_argument("--kwargs", default="{}")
    parser.add_argument("--db", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    django_setup(args.db)
    module_name, _, fn_name = args.phase.partition(":")
    fn = getattr(import_module(module_name), fn_name)
    kwargs = json.loads(args.kwargs)
    baseline = current_rss_mb()
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    result = fn(**kwargs)
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu_start
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    payload = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": peak_rss_mb(),
        "baseline_rss_mb": baseline,
        "result": result,
    }
    Path(args.out).write_text(json.dumps(payload, ensure_ascii=False, default=_jsonable), encoding="utf-8")
    return 0


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (seconds)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def profile_top(path: Path, *, limit: int = 25, sort: str = "cumulative") -> str:
    """The top ``limit`` functions of a cProfile dump, as pstats prints them."""
    import io
    import pstats

    buf = io.StringIO()
    pstats.Stats(str(path), stream=buf).strip_dirs().sort_stats(sort).print_stats(limit)
    return buf.getvalue()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


def migrate_phase() -> str:
    """Phase: create the schema (``phase_run("bench.common:migrate_phase", db=...)``)."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from django.db import connection

    return connection.vendor


def stage_timers_install() -> dict[str, float]:
    """Time the pluggable stages of rebuild / finalize / sync without a profiler's overhead.

    Wraps, in this process only, ``bookfiles.rebuilder.rebuild.book_read`` (the parse) and every
    chapter indexer and after-chapter hook the apps register in their ``AppConfig.ready()`` (loaded
    through ``kernel.indexing._load``). Returns a dict that accumulates seconds per stage name;
    whatever the stages do not cover is the core (rows written, transaction). Best effort: a
    renamed hook point just means fewer stages."""
    totals: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[name] = totals.get(name, 0.0) + time.perf_counter() - start

        return wrapper

    try:
        from bookfiles.rebuilder import rebuild
        from kernel import indexing
    except ImportError:
        return totals
    if hasattr(rebuild, "book_read"):
        rebuild.book_read = timed("parse (book_read)", rebuild.book_read)
    if hasattr(indexing, "_load"):
        load = indexing._load

        def load_timed(setting: str) -> list[tuple[str, Callable[..., object]]]:
            kind = "hook" if "HOOK" in setting else "indexer"
            return [(path, timed(f"{kind} {path}", fn)) for path, fn in load(setting)]

        indexing._load = load_timed
    return totals


# --- books ----------------------------------------------------------------------------------------


def book_size(root: Path) -> dict[str, int]:
    """Files and bytes the rebuilder reads (skips dot entries and 工作区/, like bookfiles.parser)."""
    files = size = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (rel == Path(".") and d == "工作区"))
        for name in filenames:
            if not name.startswith("."):
                files += 1
                size += (Path(dirpath) / name).stat().st_size
    return {"files": files, "bytes": size}


def page_cache_warm(root: Path) -> None:
    """Read every file once so that neither the floor nor the rebuild pays the first disk read."""
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            (Path(dirpath) / name).read_bytes()


def synthetic_book(chapters: int, *, seed: int = 1, **kwargs: Any) -> Path:
    """A generated book (bench/gen_book.py), cached under bench/out/books/ by its arguments and
    the generator's version.

    Treat it as read-only; copy it (``book_copy``) before writing into it."""
    from bench.gen_book import generate_book

    # The generator's own hash is part of the key, so editing gen_book.py never serves a stale book.
    version = hashlib.sha256((REPO / "bench" / "gen_book.py").read_bytes()).hexdigest()[:8]
    key = "-".join([f"c{chapters}", f"s{seed}"] + [f"{k}{v}" for k, v in sorted(kwargs.items())] + [version])
    root = BOOKS_CACHE / key
    if (root / ".complete").exists():
        # a bench that ingested into the cached book (bench_ingest) left its writes in the book's journal
        # (core/journal.py): the next rebuild would replay them, so every bench starts without one
        shutil.rmtree(root / ".journal", ignore_errors=True)
        return root
    if root.exists():
        shutil.rmtree(root)
    generate_book(root, chapters=chapters, seed=seed, **kwargs)
    (root / ".complete").write_text("ok\n")
    return root


def book_copy(src: Path, dest_parent: Path) -> Path:
    """Copy a (cached) book into ``dest_parent`` and return the copy's root (same folder name)."""
    dest = Path(dest_parent) / Path(src).name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".complete"))
    return dest


# --- reporting ------------------------------------------------------------------------------------


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        if value >= 0.01:
            return f"{value:.3f}"
        return f"{value:.2g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def table_format(rows: list[dict[str, Any]], columns: list[str] | None = None, *, title: str = "") -> str:
    """A plain-text table with CJK-aware column widths; numbers right-aligned."""
    if not rows:
        return f"{title}\n(no rows)\n" if title else "(no rows)\n"
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(_width(c), *(_width(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), int | float) or r.get(c) is None for r in rows) for c in columns]

    def line(values: list[str]) -> str:
        parts = []
        for value, width, right in zip(values, widths, numeric, strict=True):
            pad = " " * (width - _width(value))
            parts.append(pad + value if right else value + pad)
        return "  ".join(parts).rstrip()

    out = [title] if title else []
    out += [line(columns), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out) + "\n"


class Bench:
    """Argument parsing and result collection shared by the bench scripts.

    Flags: ``--json`` (print one JSON document instead of tables), ``--quick`` (smaller cases, for a
    smoke run), ``--keep`` (keep the temporary folder and database, and print where)."""

    def __init__(self, name: str, *, description: str | None = None, argv: list[str] | None = None) -> None:
        self.name = name
        self.parser = argparse.ArgumentParser(
            description=(description or "").strip().splitlines()[0] if description else name
        )
        self.parser.add_argument("--json", action="store_true", help="print results as one JSON document")
        self.parser.add_argument("--quick", action="store_true", help="small cases only (a smoke run)")
        self.parser.add_argument("--keep", action="store_true", help="keep the temporary folder and database")
        self.parser.add_argument(
            "--profile",
            type=Path,
            default=None,
            help="folder for cProfile dumps of the measured phases (their figures then include the overhead)",
        )
        self._argv = argv
        self._args: argparse.Namespace | None = None
        self.tables: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.extra: dict[str, Any] = {}
        self.failures: list[str] = []
        self._workdir: Path | None = None
        self.started = time.perf_counter()
        self.load_start = _loadavg()

    @property
    def args(self) -> argparse.Namespace:
        if self._args is None:
            self._args = self.parser.parse_args(self._argv)
        return self._args

    def workdir(self) -> Path:
        """A temporary folder for this run (removed at ``finish`` unless --keep)."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix=f"wn-bench-{self.name}-"))
        return self._workdir

    def database(self, label: str = "") -> str:
        """A migrated benchmark database: a new SQLite file per call (or ``$DATABASE_URL``, flushed)."""
        if os.environ.get("DATABASE_URL"):
            url = os.environ["DATABASE_URL"]
            if url.startswith(("postgres://", "postgresql://")):
                pg_database_create(url)
            phase_run("bench.common:migrate_phase", db=url)
            phase_run("bench.common:database_flush", db=url)
            return url
        folder = self.workdir() / (label or f"db{len(list(self.workdir().glob('db*')))}")
        folder.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{folder / 'bench.sqlite3'}"
        phase_run("bench.common:migrate_phase", db=url)
        return url

    def profile_path(self, name: str) -> Path | None:
        """Where to dump the cProfile stats of phase ``name`` (None without --profile)."""
        if self.args.profile is None:
            return None
        self.args.profile.mkdir(parents=True, exist_ok=True)
        return self.args.profile / f"{name}.prof"

    def profile_report(self, path: Path | None, *, limit: int = 30) -> None:
        """Print the top functions (own time and cumulative) of a phase's profile to stderr."""
        if path is None or not path.exists():
            return
        print(f"--- profile {path} (by own time)", file=sys.stderr)
        print(profile_top(path, limit=limit, sort="tottime"), file=sys.stderr)
        print(f"--- profile {path} (cumulative)", file=sys.stderr)
        print(profile_top(path, limit=limit, sort="cumulative"), file=sys.stderr)

    def attempt(self, label: str, fn: Callable[[], Any]) -> Any:
        """Run one case; a failing phase is logged and noted (the run goes on, and exits non-zero)."""
        try:
            return fn()
        except PhaseError as exc:
            last = [line for line in str(exc).splitlines() if line.strip()][-1:]
            self.log(f"{label} FAILED:\n{exc}")
            self.failures.append(label)
            self.note(f"{label}: FAILED ({last[0] if last else exc})")
            return None

    def log(self, message: str) -> None:
        """Progress goes to stderr, so ``--json`` output stays clean."""
        print(f"[{self.name} {time.perf_counter() - self.started:6.1f}s] {message}", file=sys.stderr, flush=True)

    def table(self, title: str, rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
        self.tables.append({"title": title, "columns": columns, "rows": rows})

    def note(self, text: str) -> None:
        self.notes.append(text)

    def finish(self) -> int:
        """Print the results; return the exit status (1 when a case failed)."""
        # Figures are only comparable on a quiet machine: record how busy it was.
        load = f"load average (1 min) {self.load_start} at start, {_loadavg()} at end; {os.cpu_count()} CPUs"
        self.extra.setdefault("machine", load)
        if self.args.json:
            doc = {
                "bench": self.name,
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "database": "postgresql" if "postgres" in os.environ.get("DATABASE_URL", "") else "sqlite",
                "tables": [{"title": t["title"], "rows": t["rows"]} for t in self.tables],
                "failures": self.failures,
                "notes": self.notes,
                **self.extra,
            }
            print(json.dumps(doc, ensure_ascii=False, indent=2, default=_jsonable))
        else:
            for t in self.tables:
                print(table_format(t["rows"], t["columns"], title=t["title"]))
            for n in self.notes:
                print(n)
            print(f"({load})")
        if self._workdir is not None:
            if self.args.keep:
                print(f"(kept {self._workdir})", file=sys.stderr)
            else:
                shutil.rmtree(self._workdir, ignore_errors=True)
        return 1 if self.failures else 0


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def goal_mark(value: float | None, limit: float) -> str:
    """``ok`` / ``MISSED`` for a figure that should stay ≤ limit."""
    if value is None:
        return "—"
    return "ok" if value <= limit else "MISSED"


if __name__ == "__main__":
    sys.exit(_phase_main(sys.argv[1:]))
