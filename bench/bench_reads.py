"""Read interfaces: in-process latency of every interface, keyword search against ripgrep, and
sustained requests/s of the P0 reads through a real server.

    python bench/bench_reads.py [--quick] [--json] [--keep] [--chapters 3000] [--seconds 15]

On a synthetic book (bench/gen_book.py, seed 1; 3,000 chapters, --quick 300) rebuilt into a fresh
database (SQLite, or $DATABASE_URL):

1. latency: each of the 41 interfaces + the leak scan, called in one fresh process as the front
   doors call it (``book_get`` + the selector), ×N after one warm-up call: p50 / p95 in ms. Inputs
   are picked from the book itself (an open thread, a secret, a character and one of its aliases,
   headings, a rare and a common word).
2. search vs rg: ``search`` (index; the first 50 hits in chapter order plus the total count) and
   ``rg -n -F`` / ``rg -c -F`` over the same chapter files, same queries, same run (rg's figure is
   the wall time of the subprocess, as an agent calling it from a shell pays it).
3. throughput: gunicorn (sync workers, one per CPU) on 127.0.0.1 serving the API with a read key;
   ``wrk`` (Debian package) plays a mix of the P0 reads for ``--seconds``: the previous chapters'
   tails, a thread's history, alias resolution, the overdue list and a character's front matter.
   Load generator and server share the machine's CPUs, so the figure is a floor.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, percentile, phase_run, stats, synthetic_book  # noqa: E402

VENV_BIN = Path(sys.executable).parent

# The P0 reads of the throughput mix (name → REST path template filled from the samples).
P0_MIX = {
    "chapter-recent-tails": "/api/books/{book}/chapters/recent-tails?count=3&chars=500",
    "thread-history": "/api/books/{book}/threads/{thread_id}/history",
    "alias-resolve": "/api/books/{book}/aliases/resolve?alias={alias}&type=角色",
    "thread-overdue": "/api/books/{book}/threads/overdue",
    "character": "/api/books/{book}/characters/{name}",
}


# --- phases (fresh subprocesses) ------------------------------------------------------------------


def samples_phase() -> dict:
    """Inputs for every interface, picked from the (only) book in the database."""
    from core.models import Book, Chapter, Document, Section
    from entities.models import Alias
    from entities.selectors import alias_resolve
    from kernel.exceptions import DomainError
    from threads.models import Secret, Thread

    book = Book.objects.get()
    current = book.chapters.order_by("-number").values_list("number", flat=True).first()
    thread = Thread.objects.filter(book=book, status="进行").order_by("thread_id").first()
    secret = Secret.objects.filter(book=book).order_by("secret_id").first()
    card = Document.objects.filter(book=book, kind="character_card").order_by("key").first()
    alias = None
    for candidate in Alias.objects.filter(book=book, entity__type="角色").order_by("id")[:200]:
        try:
            alias_resolve(book=book, alias=candidate.alias, type="角色")
        except DomainError:
            continue
        alias = candidate.alias
        break

    def heading(kind: str, key: str | None = None) -> str:
        rows = Section.objects.filter(document__book=book, document__kind=kind).exclude(heading="")
        if key is not None:
            rows = rows.filter(document__key=key)
        return rows.order_by("document__key", "order").values_list("heading", flat=True).first() or ""

    middle = Chapter.objects.get(book=book, number=current // 2).body
    lines = [line for line in middle.split("\n") if len(line.strip()) > 20]
    volume = book.volumes.order_by("number").values_list("number", flat=True).first()
    return {
        "book": book.slug,
        "current": current,
        "volume": volume,
        "thread_id": thread.thread_id,
        "thread_type": thread.type,
        "secret_id": secret.secret_id,
        "name": card.key,
        "card_heading": heading("character_card", card.key),
        "alias": alias,
        "outline_heading": heading("master_outline"),
        "volume_heading": heading("volume_outline", str(volume)),
        "worldview_heading": heading("worldview"),
        "rare": lines[0].strip()[5:11],  # a 6-character phrase from the middle of the book
        "common": lines[1].strip()[2:5],  # 3 characters
        "short": lines[2].strip()[3:5],  # 2 characters: the scan path
        "chapters_dir": str(Path(book.root) / "定稿" / "正文"),
    }


def _calls(s: dict) -> dict[str, dict]:
    n, c = s["current"], s["current"]
    return {
        "thread": {"thread_id": s["thread_id"]},
        "thread-history": {"thread_id": s["thread_id"]},
        "thread-closing-plan": {"thread_id": s["thread_id"]},
        "thread-description": {"thread_id": s["thread_id"]},
        "thread-overdue": {},
        "thread-list": {"type": s["thread_type"]},
        "thread-by-strength": {"strength": "高"},
        "secret": {"secret_id": s["secret_id"]},
        "secret-content": {"secret_id": s["secret_id"]},
        "secret-unknown": {},
        "outline-section": {"heading": s["outline_heading"]},
        "outline-ending": {},
        "volume-outline": {"volume": s["volume"]},
        "volume-outline-section": {"volume": s["volume"], "heading": s["volume_heading"]},
        "volume-list": {},
        "chapter": {"number": n},
        "chapter-body": {"number": n},
        "chapter-tail": {"number": n, "chars": 500},
        "chapter-head": {"number": n, "chars": 500},
        "chapter-summary": {"number": n},
        "chapter-summaries": {"start": max(1, c - 49), "end": c},
        "chapter-recent-tails": {"count": 3, "chars": 500},
        "chapter-list": {"position": "推进", "volume": s["volume"]},
        "timeline-current": {},
        "timeline-recent": {},
        "timeline-volume": {"volume": s["volume"]},
        "timeline-character": {"name": s["name"]},
        "character": {"name": s["name"]},
        "character-card": {"name": s["name"]},
        "character-section": {"name": s["name"], "heading": s["card_heading"]},
        "alias-resolve": {"alias": s["alias"], "type": "角色"},
        "character-list": {},
        "worldview-section": {"heading": s["worldview_heading"]},
        "search": {"q": s["rare"]},
        "search-regex": {"pattern": s["rare"][:2] + ".{0,3}" + s["rare"][3:5]},
        "report-overdue": {},
        "report-secrets": {},
        "report-style-drift": {},
        "report-thread-activity": {"volume": s["volume"]},
        "report-weak-hooks": {},
        "report-stats": {},
        "leak-scan": {},
    }


def latency_phase(samples: dict, repeat: int) -> list[dict]:
    """Every interface ×repeat (after one warm-up call), as the front doors call it."""
    from core.selectors import book_get
    from kernel.exceptions import DomainError
    from kernel.interfaces import interfaces_load

    registry = interfaces_load()
    rows = []
    for name, kwargs in _calls(samples).items():
        fn = registry[name].fn
        errors: list[str] = []

        def timed(fn=fn, kwargs=kwargs, errors=errors) -> float:
            start = time.perf_counter()
            try:
                fn(book=book_get(slug=samples["book"]), **kwargs)
            except DomainError as exc:
                errors.append(exc.message)
            return time.perf_counter() - start

        warm = timed()
        # A whole-book report that takes seconds is timed 3 times (its p50 is still meaningful).
        times = [timed() for _ in range(3 if warm > 1.0 else repeat)]
        rows.append({"interface": name, **stats(times), "error": errors[0] if errors else ""})
    return rows


def search_phase(samples: dict, repeat: int) -> list[dict]:
    """Keyword search (index) vs rg over the chapter files, same queries, same run."""
    from core.search import search_keyword
    from core.selectors import book_get

    book = book_get(slug=samples["book"])
    rg = shutil.which("rg")
    rows = []
    for label in ("rare", "common", "short"):
        query = samples[label]
        search_keyword(book=book, q=query)  # warm
        ours = []
        for _ in range(repeat):
            start = time.perf_counter()
            result = search_keyword(book=book, q=query)
            ours.append(time.perf_counter() - start)
        row = {"query": f"{query}（{label}）", "hits": result["total"], "search": stats(ours)}
        if rg:
            for mode, flag in (("rg -n", "-n"), ("rg -c", "-c")):
                times = []
                for _ in range(max(3, repeat // 4)):
                    start = time.perf_counter()
                    proc = subprocess.run(
                        [rg, flag, "-F", "--no-heading", query, samples["chapters_dir"]], capture_output=True
                    )
                    times.append(time.perf_counter() - start)
                    assert proc.returncode in (0, 1), proc.stderr
                row[mode] = stats(times)
                if mode == "rg -n":
                    row["rg lines"] = len(proc.stdout.splitlines())
        rows.append(row)
    return rows


def apikey_phase() -> str:
    from core.services import apikey_create

    return apikey_create(name="bench-reads", scope="read")[1]


# --- throughput ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(port: int, key: str, book: str, timeout: float = 30.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/books/", headers={"X-API-Key": key})
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server did not answer in time")


def _wrk_script(paths: list[str], key: str, folder: Path) -> Path:
    from urllib.parse import quote

    quoted = [quote(p, safe="/?&=") for p in paths]
    lua = folder / "mix.lua"
    lua.write_text(
        "local paths = {" + ", ".join(json.dumps(p) for p in quoted) + "}\n"
        "local i = 0\n"
        f'wrk.headers["X-API-Key"] = "{key}"\n'
        "request = function()\n  i = i % #paths + 1\n  return wrk.format(nil, paths[i])\nend\n",
        encoding="utf-8",
    )
    return lua


def _wrk_parse(text: str) -> dict:
    out: dict = {}
    for line in text.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            out["requests_per_s"] = float(parts[1])
        elif parts and parts[0] in ("50%", "90%", "99%") and len(parts) == 2:
            value = parts[1]
            unit = 1e-3 if value.endswith("ms") else 1e-6 if value.endswith("us") else 1.0
            out[f"p{parts[0][:-1]}_ms"] = float(value.rstrip("mus")) * unit * 1000
        elif "Non-2xx or 3xx responses" in line:
            out["non_2xx"] = int(parts[-1])
        elif "requests in" in line:
            out["requests"] = int(parts[0])
    out.setdefault("non_2xx", 0)
    return out


def throughput(bench: Bench, db: str, samples: dict, seconds: int) -> dict | None:
    wrk = shutil.which("wrk")
    gunicorn = VENV_BIN / "gunicorn"
    if not wrk or not gunicorn.exists():
        bench.note("throughput skipped: needs `wrk` (apt-get install wrk) and gunicorn (requirements.txt)")
        return None
    key = phase_run("bench.bench_reads:apikey_phase", db=db)["result"]
    workers = os.cpu_count() or 1
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": db, "DJANGO_SETTINGS_MODULE": "webnovel.settings", "DEBUG": "0"}
    server = subprocess.Popen(
        [
            str(gunicorn),
            "webnovel.wsgi:application",
            "-w",
            str(workers),
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_http(port, key, samples["book"])
        paths = [t.format(**samples) for t in P0_MIX.values()]
        folder = Path(tempfile.mkdtemp(prefix="wn-wrk-"))
        script = _wrk_script(paths, key, folder)
        connections = 4 * workers
        bench.log(f"throughput: gunicorn ×{workers} workers, wrk 1 thread × {connections} connections, {seconds}s")
        base = f"http://127.0.0.1:{port}"
        subprocess.run([wrk, "-t1", "-c2", "-d2s", "-s", str(script), base], capture_output=True)  # warm
        proc = subprocess.run(
            [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), base],
            capture_output=True,
            text=True,
        )
        result = _wrk_parse(proc.stdout)
        result.update({"workers": workers, "connections": connections, "seconds": seconds, "paths": paths})
        shutil.rmtree(folder, ignore_errors=True)
        return result
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


# --- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    bench = Bench("reads", description=__doc__, argv=argv)
    bench.parser.add_argument(
        "--chapters", type=int, default=None, help="synthetic book size (default 3000; --quick 300)"
    )
    bench.parser.add_argument("--repeat", type=int, default=None, help="calls per interface (default 30; --quick 10)")
    bench.parser.add_argument("--seconds", type=int, default=None, help="throughput run length (default 15; --quick 5)")
    args = bench.args
    chapters = args.chapters or (300 if args.quick else 3000)
    repeat = args.repeat or (10 if args.quick else 30)
    seconds = args.seconds or (5 if args.quick else 15)

    bench.log(f"synthetic {chapters}: generate (cached) and rebuild")
    root = synthetic_book(chapters)
    db = bench.database(label="db-reads")
    rebuilt = phase_run("bench.bench_rebuild:rebuild_phase", {"root": str(root)}, db=db)
    bench.log(f"rebuilt in {rebuilt['seconds']:.1f}s")
    samples = phase_run("bench.bench_reads:samples_phase", db=db)["result"]
    bench.extra["samples"] = samples

    bench.log(f"latency: every interface ×{repeat}")
    latency = phase_run("bench.bench_reads:latency_phase", {"samples": samples, "repeat": repeat}, db=db)["result"]
    bench.table(
        f"In-process latency, {chapters:,} chapters (ms, ×{repeat})",
        [
            {
                "interface": r["interface"],
                "p50 ms": r["p50"] * 1000,
                "p95 ms": r["p95"] * 1000,
                "max ms": r["max"] * 1000,
                "error": r["error"][:40],
            }
            for r in latency
        ],
    )
    all_p50 = [r["p50"] * 1000 for r in latency]
    bench.note(f"Median of the interfaces' p50: {percentile(all_p50, 50):.2f} ms; slowest p50: {max(all_p50):.1f} ms.")

    bench.log("search vs rg")
    searches = phase_run("bench.bench_reads:search_phase", {"samples": samples, "repeat": repeat}, db=db)["result"]
    rows = []
    for r in searches:
        row = {"query": r["query"], "lines": r["hits"], "search p50 ms": r["search"]["p50"] * 1000}
        row["search p95 ms"] = r["search"]["p95"] * 1000
        if "rg -n" in r:
            row["rg -n p50 ms"] = r["rg -n"]["p50"] * 1000
            row["rg -c p50 ms"] = r["rg -c"]["p50"] * 1000
            row["rg lines"] = r["rg lines"]
            row["× faster than rg -n"] = r["rg -n"]["p50"] / r["search"]["p50"]
        rows.append(row)
    bench.table("Keyword search (index) vs ripgrep over the same chapter files", rows)
    if not shutil.which("rg"):
        bench.note("rg not found: apt-get install ripgrep to compare")

    result = throughput(bench, db, samples, seconds)
    if result:
        bench.table(
            "Sustained requests/s, P0 read mix through gunicorn + wrk on loopback",
            [
                {
                    "requests/s": result.get("requests_per_s"),
                    "p50 ms": result.get("p50_ms"),
                    "p90 ms": result.get("p90_ms"),
                    "p99 ms": result.get("p99_ms"),
                    "requests": result.get("requests"),
                    "non-2xx": result.get("non_2xx"),
                    "workers": result["workers"],
                    "connections": result["connections"],
                }
            ],
        )
        bench.extra["throughput"] = result
    bench.extra["latency"] = latency
    bench.extra["search"] = searches
    bench.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
