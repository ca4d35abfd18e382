"""Load: a production server (gunicorn, several worker processes) and N concurrent API clients on
loopback reading while chapters are finalized and extractions ingested.

    python bench/bench_load.py [--quick] [--json] [--keep] [--clients 16] [--workers 4]
                               [--seconds 30] [--chapters 300]

The database is a fresh SQLite file (WAL) in a temporary folder, or ``$DATABASE_URL`` (migrated
and **flushed**). A synthetic book (bench/gen_book.py) is rebuilt into it; then for ``seconds``:

- ``clients`` reader threads call a mix of GET endpoints (chapter meta / body / tail, search,
  thread and entity reads, reports, the context pack) over fresh loopback connections;
- one writer thread POSTs extraction JSON for random chapters (ingestion, a write transaction);
- one finalizer thread writes chapter N+1 into the book folder and runs
  ``manage.py finalize <book> N+1`` in a subprocess (as an author's agent would), again and again.

Printed: requests, errors (any 5xx, any connection failure, any unexpected status, and any
"database is locked" anywhere), requests/s, p50 / p99 latency of reads and writes, finalizes run,
and the load average. Exit status 1 when there was any error.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_faults import child_env  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(*args: str, db_url: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**child_env(db_url), **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )


def api_key_create(db_url: str) -> str:
    proc = manage("apikey", "create", "--name", "load", "--scope", "write", "--json", db_url=db_url)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout)["key"]


class Server:
    """gunicorn serving webnovel.wsgi on a free loopback port."""

    def __init__(self, db_url: str, *, workers: int, log: Path, books_dir: Path | None = None) -> None:
        self.port = free_port()
        env = child_env(db_url)
        env.update({"DEBUG": "0", "ALLOWED_HOSTS": "127.0.0.1,localhost"})
        if books_dir is not None:
            env["WEBNOVEL_BOOKS_DIR"] = str(books_dir)
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "webnovel.wsgi:application",
                "--workers", str(workers), "--bind", f"127.0.0.1:{self.port}",
                "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning",
            ],
            cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.proc.returncode}): {log.read_text()[-2000:]}")
            try:
                status, _, _ = request(self.port, "GET", "/api/books/", key="")
                if status == 401:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("gunicorn did not answer within 60 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def request(port: int, method: str, path: str, *, key: str, body: bytes | None = None) -> tuple[int, bytes, float]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"X-API-Key": key} if key else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, quote(path, safe="/?=&%:-_.~"), body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, data, time.perf_counter() - start
    finally:
        conn.close()


def read_paths(slug: str, chapters: int, names: list[str], threads: list[str]) -> list[str]:
    """One random GET of the mix (chapter reads dominate, as for a writing agent)."""
    n = random.randint(1, chapters)
    name = quote(random.choice(names)) if names else "x"
    thread = quote(random.choice(threads)) if threads else "x"
    b = f"/api/books/{quote(slug)}"
    return random.choice(
        [
            f"{b}/chapters/{n}",
            f"{b}/chapters/{n}/body",
            f"{b}/chapters/{n}/tail?chars=500",
            f"{b}/chapters/summaries?start={max(1, n - 5)}&end={n}",
            f"{b}/chapters/recent-tails?count=3",
            f"{b}/search?{urlencode({'q': random.choice(names) if names else '剑'})}",
            f"{b}/threads?type=伏笔",
            f"{b}/threads/{thread}",
            f"{b}/threads/overdue",
            f"{b}/entities?type=角色",
            f"{b}/entities/by-alias?alias={name}",
            f"{b}/timeline/current",
            f"{b}/reports/stats",
            f"{b}/chapters/{n}/context?task=write",
        ]
    )


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reads: list[float] = []
        self.writes: list[float] = []
        self.statuses: dict[str, int] = {}
        self.errors: list[str] = []
        self.finalizes = 0
        self.finalize_seconds: list[float] = []

    def add(self, kind: str, status: int, data: bytes, seconds: float, path: str, ok: tuple[int, ...]) -> None:
        with self.lock:
            (self.reads if kind == "read" else self.writes).append(seconds)
            self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
            if status not in ok or b"database is locked" in data:
                self.errors.append(f"{status} {path}: {data[:200]!r}")

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def chapter_next(root: Path, number: int) -> Path:
    """Write chapter ``number`` by copying the last chapter file of the book (same volume folder)."""
    from bench.gen_book import PARAMS_FILE, chapter_append

    if (root / PARAMS_FILE).is_file():  # a generated book writes its next chapter in its own style
        return chapter_append(root, number=number)
    last = sorted(root.glob("定稿/正文/**/第*章.md"))[-1]
    target = last.with_name(f"第{number:04d}章.md")
    text = last.read_text(encoding="utf-8")
    target.write_text(text.replace("\n---\n", f"\n---\n第{number}章新写的一段。\n", 1), encoding="utf-8")
    return target


def load_run(
    *,
    port: int,
    key: str,
    slug: str,
    root: Path,
    db_url: str,
    clients: int,
    seconds: float,
    chapters: int,
    names: list[str],
    threads: list[str],
    finalize: bool = True,
) -> dict[str, Any]:
    """Run readers, an ingesting writer and a finalizer for ``seconds``; return the figures."""
    tally = Tally()
    stop = time.monotonic() + seconds

    def reader() -> None:
        while time.monotonic() < stop:
            path = read_paths(slug, chapters, names, threads)
            try:
                status, data, elapsed = request(port, "GET", path, key=key)
            except Exception as exc:  # noqa: BLE001 - every failure is an error to count
                tally.error(f"connection {path}: {exc!r}")
                continue
            tally.add("read", status, data, elapsed, path, ok=(200, 404))

    def writer() -> None:
        i = 0
        while time.monotonic() < stop:
            i += 1
            n = random.randint(1, chapters)
            payload = {
                "entities_new": [{"name": f"过客{n}号", "type": "角色", "confidence": 0.9}],
                "scenes": [{"index": 1, "location": "山门", "summary": f"第{i}次提交", "characters": []}],
            }
            path = f"/api/books/{quote(slug)}/chapters/{n}/extraction"
            try:
                status, data, elapsed = request(
                    port, "POST", path, key=key, body=json.dumps(payload, ensure_ascii=False).encode()
                )
            except Exception as exc:  # noqa: BLE001 - every failure is an error to count
                tally.error(f"connection {path}: {exc!r}")
                continue
            tally.add("write", status, data, elapsed, path, ok=(200,))

    def finalizer() -> None:
        number = chapters
        while time.monotonic() < stop:
            number += 1
            chapter_next(root, number)
            start = time.perf_counter()
            proc = manage("finalize", slug, str(number), "--json", db_url=db_url)
            with tally.lock:
                tally.finalize_seconds.append(time.perf_counter() - start)
                tally.finalizes += 1
            if proc.returncode != 0 or "database is locked" in proc.stderr + proc.stdout:
                tally.error(f"finalize {number}: {proc.stderr[-500:]}")

    workers = [threading.Thread(target=reader) for _ in range(clients)] + [threading.Thread(target=writer)]
    if finalize:
        workers.append(threading.Thread(target=finalizer))
    started = time.monotonic()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    wall = time.monotonic() - started
    total = len(tally.reads) + len(tally.writes)
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": total,
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "requests_per_s": round(total / wall, 1),
        "reads": len(tally.reads),
        "read_p50_ms": ms(_pct(tally.reads, 50)),
        "read_p99_ms": ms(_pct(tally.reads, 99)),
        "writes": len(tally.writes),
        "write_p50_ms": ms(_pct(tally.writes, 50)),
        "write_p99_ms": ms(_pct(tally.writes, 99)),
        "finalizes": tally.finalizes,
        "finalize_p50_s": None if not tally.finalize_seconds else round(_pct(tally.finalize_seconds, 50), 2),
        "statuses": tally.statuses,
    }


def book_names(db_url: str, slug: str) -> tuple[list[str], list[str]]:
    code = (
        "import json;from entities.models import Alias;from threads.models import Thread;"
        f"print(json.dumps([list(Alias.objects.filter(entity__book__slug={slug!r}).values_list('alias', flat=True)[:200]),"
        f"list(Thread.objects.filter(book__slug={slug!r}).values_list('thread_id', flat=True)[:200])]))"
    )
    proc = manage("shell", "-v", "0", "-c", code, db_url=db_url)
    if proc.returncode != 0:
        return [], []
    names, threads = json.loads(proc.stdout.strip().splitlines()[-1])
    return names, threads


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="demo book, 4 clients, 2 workers, 10 s")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--clients", type=int, default=16, help="concurrent reader threads")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--seconds", type=float, default=30, help="duration of the run")
    parser.add_argument("--chapters", type=int, default=300, help="chapters of the synthetic book (0: demo book)")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.clients, opts.workers, opts.seconds, opts.chapters = 4, 2, 10, 0
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    workdir = Path(tempfile.mkdtemp(prefix="wn-load-"))
    db_url = os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'load.sqlite3'}"
    load_start = os.getloadavg()
    if manage("migrate", "--noinput", db_url=db_url).returncode != 0:
        raise SystemExit("migrate failed")
    if os.environ.get("DATABASE_URL"):
        manage("flush", "--noinput", db_url=db_url)
    if opts.chapters:
        from bench.common import book_copy, synthetic_book

        root = book_copy(synthetic_book(opts.chapters, seed=1), workdir)
        chapters = opts.chapters
    else:
        root = workdir / "demo-book"
        shutil.copytree(REPO / "examples" / "demo-book", root)
        chapters = 24
    proc = manage("rebuild", str(root), "--json", db_url=db_url)
    if proc.returncode != 0:
        raise SystemExit(f"rebuild failed: {proc.stderr[-1000:]}")
    slug = json.loads(proc.stdout)["book"]
    key = api_key_create(db_url)
    names, threads = book_names(db_url, slug)
    log(f"book {slug}: {chapters} chapters, {len(names)} names, {len(threads)} threads; gunicorn ×{opts.workers}")
    server = Server(db_url, workers=opts.workers, log=workdir / "gunicorn.log")
    try:
        figures = load_run(
            port=server.port,
            key=key,
            slug=slug,
            root=root,
            db_url=db_url,
            clients=opts.clients,
            seconds=opts.seconds,
            chapters=chapters,
            names=names,
            threads=threads,
        )
    finally:
        server.stop()
    gunicorn_log = (workdir / "gunicorn.log").read_text(errors="replace")
    figures.update(
        {
            "database": db_url.split(":", 1)[0],
            "gunicorn_workers": opts.workers,
            "book_chapters": chapters,
            "server_tracebacks": gunicorn_log.count("Traceback"),
            "load_average": [round(load_start[0], 2), round(os.getloadavg()[0], 2)],
            "cpus": os.cpu_count(),
        }
    )
    if opts.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
    else:
        print(
            f"load on {figures['database']}: gunicorn ×{opts.workers}, {opts.clients} readers + 1 ingester + 1 finalizer, "
            f"{figures['seconds']} s, {chapters}-chapter book, load average {figures['load_average']} ({figures['cpus']} CPUs)"
        )
        print(
            f"  requests {figures['requests']}  errors {figures['errors']}  {figures['requests_per_s']} req/s  "
            f"server tracebacks {figures['server_tracebacks']}"
        )
        print(f"  reads  {figures['reads']:6}  p50 {figures['read_p50_ms']} ms  p99 {figures['read_p99_ms']} ms")
        print(f"  writes {figures['writes']:6}  p50 {figures['write_p50_ms']} ms  p99 {figures['write_p99_ms']} ms")
        print(f"  finalizes {figures['finalizes']}  p50 {figures['finalize_p50_s']} s  statuses {figures['statuses']}")
        for sample in figures["error_samples"]:
            print(f"  error: {sample}")
    if opts.keep:
        log(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if figures["errors"] or figures["server_tracebacks"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
