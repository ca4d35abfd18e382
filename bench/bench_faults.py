"""Crash at any moment: kill -9 a rebuild, a sync and an ingestion at random instants, then check
that the database holds either the state before or the state after the operation (never a mix),
and that rerunning the operation succeeds.

    python bench/bench_faults.py [--quick] [--json] [--keep] [--kills 10] [--chapters 300]

Each operation runs in its own child process (``python bench/bench_faults.py child …``) against a
file database (a fresh SQLite file in WAL mode, or ``$DATABASE_URL``, which is migrated and
**flushed**). The parent sleeps a random time between 0 and 1.2× the operation's measured length,
sends SIGKILL, dumps the state (``state_dump``: every file-derived row plus every row of the
entities and memory apps, without database ids or timestamps), reruns the operation to completion
and dumps again. A kill counts as "survived" when the process was still running when killed, the
state after the kill equals the state before the operation or the state after the rerun, and the
rerun succeeded.

The child can also pause itself inside the operation's transaction (``--pause-file F
--pause-after N``: after its N-th write statement it creates F and sleeps), which is how
``tests/hardening/test_faults.py`` kills it at a known point.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE")


# --- the child ------------------------------------------------------------------------------------


def _pause_wrapper(pause_file: Path, after: int, resume_file: Path | None = None):
    """An execute wrapper that, after ``after`` write statements inside a transaction, announces
    itself through ``pause_file`` and sleeps (to be killed) — or, given ``resume_file``, until that
    file appears, then carries on (a writer held in flight while another writer of the book starts)."""
    from django.db import connection

    writes = 0

    def wrapper(execute, sql, params, many, context):
        nonlocal writes
        result = execute(sql, params, many, context)
        if connection.in_atomic_block and sql.lstrip()[:6].upper() in WRITE_VERBS:
            writes += 1
            if writes == after:
                pause_file.write_text(str(os.getpid()))
                deadline = time.monotonic() + 3600
                while time.monotonic() < deadline and not (resume_file and resume_file.exists()):
                    time.sleep(0.02)
        return result

    return wrapper


def state_dump() -> str:
    """Every book's file-derived dump plus the rows of the curated apps (entities, memory), with
    database ids replaced by the natural values of the rows they point to, sorted: equal strings
    mean equal states, whatever the autoincrement counters did."""
    from django.apps import apps
    from django.db import models

    from bookfiles.rebuilder import book_dump
    from core.models import Book

    out: dict[str, Any] = {"books": {b.slug: book_dump(book=b) for b in Book.objects.order_by("slug")}}
    cache: dict[tuple[str, int], Any] = {}

    def natural(model: type[models.Model], pk: int | None, depth: int = 0) -> Any:
        if pk is None:
            return None
        key = (model._meta.label, pk)
        if key not in cache:
            row = model.objects.filter(pk=pk).values().first() or {}
            cache[key] = _row(model, row, depth + 1)
        return cache[key]

    def _row(model: type[models.Model], row: dict[str, Any], depth: int) -> Any:
        values: dict[str, Any] = {}
        for field in model._meta.concrete_fields:
            if field.primary_key or isinstance(field, models.DateTimeField):
                continue
            value = row.get(field.attname)
            if field.is_relation:
                target = field.related_model
                value = (
                    target.objects.filter(pk=value).values_list("slug", flat=True).first()
                    if (target is Book)
                    else (natural(target, value, depth) if depth < 3 else None)
                )
            values[field.name] = value
        return values

    for label in ("entities", "memory"):
        for model in apps.get_app_config(label).get_models():
            rows = [_row(model, r, 0) for r in model.objects.values()]
            out[model._meta.label] = sorted(
                json.dumps(r, ensure_ascii=False, sort_keys=True, default=str) for r in rows
            )
    return json.dumps(out, ensure_ascii=False, sort_keys=True, indent=1)


def memory_check(slug: str, deleted: int, ingested: int) -> dict[str, Any]:
    """What the memory and the entities hold about a deleted chapter and an ingested one: facts of
    the deleted chapter that a fresh derivation of the whole book would not give (derived in a
    transaction that is rolled back: a deleted chapter keeps the facts of what outlives it — its
    ingested extraction, the timeline file's events), its chunks, the hit log's size, and the
    ingested chapter's extraction."""
    from django.db import transaction

    from core.models import Book
    from entities.models import Extraction
    from memory.models import Chunk, Fact, MemoryHit
    from memory.pipeline import memory_refresh

    book = Book.objects.get(slug=slug)

    def keys() -> set[str]:
        return set(Fact.objects.filter(book=book, source_chapter=deleted).values_list("key", flat=True))

    held = keys()
    with transaction.atomic():
        memory_refresh(book=book)
        fresh = keys()
        transaction.set_rollback(True)
    return {
        "deleted_facts": len(held - fresh),
        "deleted_chunks": Chunk.objects.filter(book=book, chapter=deleted).count(),
        "hits": MemoryHit.objects.filter(book=book).count(),
        "hit_links": MemoryHit.facts.through.objects.filter(memoryhit__book=book).count(),
        "extraction": Extraction.objects.filter(book=book, chapter=ingested).values_list("payload", flat=True).first(),
    }


def child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_faults.py child")
    parser.add_argument(
        "op",
        choices=[
            "rebuild",
            "sync",
            "finalize",
            "ingest",
            "dump",
            "migrate",
            "context",
            "memcheck",
            "confirm",
            "merge",
            "fact",
            "journalcheck",
            "dumpbook",
        ],
    )
    parser.add_argument("args", nargs="*")
    parser.add_argument("--pause-file", type=Path)
    parser.add_argument("--pause-after", type=int, default=5)
    parser.add_argument("--resume-file", type=Path, help="after pausing, carry on once this file exists")
    parser.add_argument("--count-writes", action="store_true", help="print the write statements made in transactions")
    opts = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    import django

    django.setup()
    from contextlib import nullcontext

    from django.core.management import call_command
    from django.db import connection

    if opts.op == "dump":
        sys.stdout.write(state_dump())
        return 0
    if opts.op == "memcheck":
        sys.stdout.write(json.dumps(memory_check(opts.args[0], int(opts.args[1]), int(opts.args[2]))))
        return 0
    if opts.op == "dumpbook":
        from bookfiles.rebuilder import book_dump
        from core.models import Book

        sys.stdout.write(book_dump(book=Book.objects.get(slug=opts.args[0])))
        return 0
    if opts.op == "journalcheck":
        sys.stdout.write(json.dumps(journal_check(opts.args[0]), ensure_ascii=False))
        return 0
    counted = [0]

    def counter(execute, sql, params, many, context):
        if connection.in_atomic_block and sql.lstrip()[:6].upper() in WRITE_VERBS:
            counted[0] += 1
        return execute(sql, params, many, context)

    guard = (
        connection.execute_wrapper(_pause_wrapper(opts.pause_file, opts.pause_after, opts.resume_file))
        if opts.pause_file
        else connection.execute_wrapper(counter)
        if opts.count_writes
        else nullcontext()
    )
    with guard:
        if opts.op == "migrate":
            call_command("migrate", verbosity=0, interactive=False)
        elif opts.op == "rebuild":
            call_command("rebuild", opts.args[0], json=True)
        elif opts.op == "sync":
            call_command("sync", opts.args[0], json=True)
        elif opts.op == "finalize":
            call_command("finalize", opts.args[0], opts.args[1], json=True)
        elif opts.op == "ingest":
            call_command("ingest", opts.args[0], opts.args[1], opts.args[2])
        elif opts.op == "context":  # what an agent does before a chapter: build the pack, log it
            call_command("context", opts.args[0], opts.args[1], format="json")
        elif opts.op in ("confirm", "merge", "fact"):
            curate(opts.op, *opts.args)
    if opts.count_writes:
        sys.stderr.write(f"writes {counted[0]}\n")
    return 0


def curate(op: str, slug: str, *args: str) -> None:
    """A curator's or an agent's journaled write, through its service: ``confirm`` the oldest pending
    item, ``merge`` entity SOURCE into TARGET (names or ids), ``fact`` I (observe a memory fact)."""
    from core.models import Book
    from entities.models import PendingItem
    from entities.selectors import entity_get
    from entities.services.marks import entity_merge
    from entities.services.pending import pending_item_confirm
    from memory.services import fact_observe

    book = Book.objects.get(slug=slug)
    if op == "confirm":
        pending_item_confirm(item=PendingItem.objects.filter(book=book, status="pending").order_by("pk").first())
    elif op == "merge":
        entity_merge(source=entity_get(book=book, ref=args[0]), target=entity_get(book=book, ref=args[1]))
    elif op == "fact":
        i = int(args[0])
        fact_observe(
            book=book, category="open_loops", subject=f"信物{i}", field="下落", value=f"藏于第{i}处", number=1 + i % 5
        )


def journal_check(slug: str) -> dict[str, Any]:
    """The book's journal against its database: events in the log (whole lines), JournalApplied rows,
    events without a row (lost, once a sync ran), rows without an event, seqs marked twice, and the
    rows that would show a write applied twice (extractions per chapter, facts per key)."""
    from django.db.models import Count

    from core.journal import journal_events
    from core.models import Book, JournalApplied
    from entities.models import Entity, Extraction
    from memory.models import Fact

    book = Book.objects.get(slug=slug)
    events = {e["seq"]: e["op"] for e in journal_events(root=Path(book.root))}
    rows = list(JournalApplied.objects.filter(book=book).values_list("seq", flat=True))
    ops: dict[str, int] = {}
    for op in events.values():
        ops[op] = ops.get(op, 0) + 1
    return {
        "events": len(events),
        "applied_rows": len(rows),
        "unapplied": sorted(set(events) - set(rows)),
        "rows_without_event": sorted(set(rows) - set(events)),
        "marked_twice": len(rows) - len(set(rows)),
        "extractions_doubled": Extraction.objects.filter(book=book)
        .values("chapter")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count(),
        "entities_doubled": Entity.objects.filter(book=book)
        .values("canonical_name")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count(),
        "facts_doubled": Fact.objects.filter(book=book).values("key").annotate(n=Count("id")).filter(n__gt=1).count(),
        "ops": ops,
    }


# --- the parent's helpers (also used by tests/hardening) ------------------------------------------


def child_cmd(
    op: str, *args: str, pause_file: Path | None = None, pause_after: int = 5, resume_file: Path | None = None
) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", op, *map(str, args)]
    if pause_file is not None:
        cmd += ["--pause-file", str(pause_file), "--pause-after", str(pause_after)]
    if resume_file is not None:
        cmd += ["--resume-file", str(resume_file)]
    return cmd


def child_env(db_url: str) -> dict[str, str]:
    env = dict(os.environ)  # under pytest this keeps WEBNOVEL_MEMORY_INDEX_DIR=off (tests/conftest.py)
    env["DATABASE_URL"] = db_url
    env["DJANGO_SETTINGS_MODULE"] = "webnovel.settings"
    env["PYTHONPATH"] = str(REPO)
    return env


def child_run(op: str, *args: str, db_url: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run one child operation to completion."""
    proc = subprocess.run(
        child_cmd(op, *args), env=child_env(db_url), cwd=REPO, capture_output=True, text=True, timeout=900
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"child {op} {args} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def child_kill_at_pause(
    op: str, *args: str, db_url: str, pause_file: Path, pause_after: int = 5, timeout: float = 120
) -> int:
    """Start the child, wait until it pauses inside its transaction, SIGKILL it; its return code."""
    proc = child_start_paused(op, *args, db_url=db_url, pause_file=pause_file, pause_after=pause_after, timeout=timeout)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return proc.returncode


def child_start_paused(
    op: str,
    *args: str,
    db_url: str,
    pause_file: Path,
    resume_file: Path | None = None,
    pause_after: int = 5,
    timeout: float = 120,
) -> subprocess.Popen:
    """Start the child and return once it is paused inside its transaction (holding its locks); it
    carries on when ``resume_file`` is created (without one it waits to be killed). Its stdout / stderr
    are pipes, read at ``communicate``."""
    proc = subprocess.Popen(
        child_cmd(op, *args, pause_file=pause_file, pause_after=pause_after, resume_file=resume_file),
        env=child_env(db_url),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while not pause_file.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"child {op} ended before pausing ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"child {op} never paused")
        time.sleep(0.02)
    return proc


def child_start(op: str, *args: str, db_url: str) -> subprocess.Popen:
    """Start the child without waiting (stdout / stderr are pipes)."""
    return subprocess.Popen(
        child_cmd(op, *args), env=child_env(db_url), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def child_kill_after(op: str, *args: str, db_url: str, delay: float) -> bool:
    """Start the child, SIGKILL it after ``delay`` seconds; True when it was still running."""
    proc = subprocess.Popen(
        child_cmd(op, *args), env=child_env(db_url), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def dump(db_url: str) -> str:
    return child_run("dump", db_url=db_url).stdout


# --- the benchmark --------------------------------------------------------------------------------


def _edit(root: Path, number: int, i: int) -> None:
    """Append a distinct sentence to a chapter (so a rebuild / sync has something to change)."""
    path = next(root.rglob(f"第{number:04d}章.md"))
    path.write_text(path.read_text(encoding="utf-8") + f"\n风声第{i}次掠过山门。\n", encoding="utf-8")


def _extraction(book_root: Path, i: int) -> dict[str, Any]:
    return {
        "entities_new": [{"name": f"过客{i}号", "type": "角色", "aliases": [f"过客{i}"], "confidence": 0.9}],
        "state_changes": [],
        "relationships_new": [],
        "scenes": [{"index": 1, "location": "山门", "summary": f"第{i}次", "characters": []}],
    }


def _split(state: str) -> tuple[str, str]:
    """(the part written inside the operation's transaction, the part after-commit hooks derive)."""
    data = json.loads(state)
    hooks = {k: v for k, v in data.items() if k.startswith("memory.")}
    atomic = {k: v for k, v in data.items() if k not in hooks}
    return json.dumps(atomic, sort_keys=True), json.dumps(hooks, sort_keys=True)


def _classify(after_kill: str, before: str, after: str) -> str:
    """state_before / state_after: the whole state is one of the two. hooks_interrupted: the
    transaction's part is the new one but the after-commit memory derivation was killed (best
    effort by design; the rerun redoes it). mixed_states: anything else, a corruption."""
    if after_kill == before:
        return "state_before"
    if after_kill == after:
        return "state_after"
    if _split(after_kill)[0] in (_split(before)[0], _split(after)[0]):
        return "hooks_interrupted"
    return "mixed_states"


def memory_rounds(*, root: Path, slug: str, db_url: str, chapters: int, rounds: int, rng: random.Random, workdir: Path):
    """Issue 19 item 1, as an agent meets it: log a context pack (the hit log now references the last
    chapters' facts), edit one chapter and delete the last, sync — killed at a random instant in half
    the rounds, then rerun — and check that the memory followed: no failed hook, no fact or chunk of
    the deleted chapter left. The chapter is put back (and synced) for the next round."""
    tally = {"rounds": 0, "killed_mid_run": 0, "sync_failures": 0, "hook_failures": 0, "stale_after": 0}
    seconds = []
    last = next(root.rglob(f"第{chapters:04d}章.md"))
    aside = workdir / "aside.md"
    for i in range(rounds):
        child_run("context", slug, str(chapters + 1), db_url=db_url)
        _edit(root, 1 + (i * 11) % (chapters - 1), 3000 + i)
        last.rename(aside)
        if i % 2:
            tally["killed_mid_run"] += child_kill_after(
                "sync", slug, db_url=db_url, delay=rng.uniform(0, 2 * seconds[0])
            )
        t0 = time.monotonic()
        proc = child_run("sync", slug, db_url=db_url, check=False)
        seconds.append(time.monotonic() - t0)
        report = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
        check = json.loads(child_run("memcheck", slug, str(chapters), "0", db_url=db_url).stdout)
        stale = check["deleted_facts"] + check["deleted_chunks"]
        tally["rounds"] += 1
        tally["sync_failures"] += proc.returncode != 0 and not report.get("hook_failures")
        tally["hook_failures"] += bool(report.get("hook_failures"))
        tally["stale_after"] += bool(stale)
        print(
            f"memory #{i}: sync rc {proc.returncode}, hook failures {len(report.get('hook_failures') or [])}, "
            f"facts/chunks of the deleted chapter left {check['deleted_facts']}/{check['deleted_chunks']}, "
            f"hit-log links {check['hit_links']}",
            file=sys.stderr,
            flush=True,
        )
        aside.rename(last)
        child_run("sync", slug, db_url=db_url, check=False)
    return {"seconds_per_sync": round(sorted(seconds)[len(seconds) // 2], 2), **tally}


def concurrent_rounds(
    *, root: Path, slug: str, db_url: str, chapters: int, rounds: int, rng: random.Random, workdir: Path
):
    """Issue 19 item 2: an ingestion of the book while a rebuild of it is inside its transaction (held
    there after a random number of its writes — 3–20 of a rebuild, 1–3 of an ingestion — for a random 0.5–2 s, then let go), and the other
    way round in odd rounds. The second writer must wait for the first, then land. Counted: rounds in
    which the second writer was still waiting when the first was let go, failures of either (deadlock,
    ``uniq_appearance``), extractions lost."""
    tally = {"rounds": 0, "second_waited": 0, "rebuild_failures": 0, "ingest_failures": 0, "extractions_lost": 0}
    for i in range(rounds):
        _edit(root, 1 + (i * 13) % chapters, 4000 + i)
        chapter = 1 + (i * 5) % chapters
        payload = workdir / f"concurrent-{i}.json"
        payload.write_text(json.dumps(_extraction(root, 5000 + i), ensure_ascii=False), encoding="utf-8")
        pause, resume = workdir / f"paused-{i}", workdir / f"resume-{i}"
        rebuild_args, ingest_args = ("rebuild", str(root)), ("ingest", slug, str(chapter), str(payload))
        first_args, second_args = (ingest_args, rebuild_args) if i % 2 else (rebuild_args, ingest_args)
        first = child_start_paused(
            *first_args,
            db_url=db_url,
            pause_file=pause,
            resume_file=resume,
            pause_after=rng.randint(1, 3) if i % 2 else rng.randint(3, 20),
        )
        second = child_start(*second_args, db_url=db_url)
        time.sleep(rng.uniform(0.5, 2.0))
        waited = second.poll() is None
        resume.write_text("go")
        _, first_err = first.communicate(timeout=900)
        _, second_err = second.communicate(timeout=900)
        rebuild, ingest = (second, first) if i % 2 else (first, second)
        check = json.loads(child_run("memcheck", slug, "0", str(chapter), db_url=db_url).stdout)
        lost = f"过客{5000 + i}号" not in json.dumps(check["extraction"], ensure_ascii=False)
        tally["rounds"] += 1
        tally["second_waited"] += waited
        tally["rebuild_failures"] += rebuild.returncode != 0
        tally["ingest_failures"] += ingest.returncode != 0
        tally["extractions_lost"] += lost
        errors = " | ".join(e.strip().splitlines()[-1] for e in (first_err, second_err) if e.strip())
        print(
            f"concurrent #{i}: {first_args[0]} held, {second_args[0]} waited={waited}; rebuild rc {rebuild.returncode}"
            f" ingest rc {ingest.returncode} lost={lost} {errors[:300]}",
            file=sys.stderr,
            flush=True,
        )
    return tally


def journal_rounds(
    *, root: Path, slug: str, db_url: str, chapters: int, rounds: int, rng: random.Random, workdir: Path
) -> dict[str, dict[str, Any]]:
    """Issue 14 item 3: kill -9 a journaled write inside its transaction — an ingestion, a confirm of a
    pending item, a merge, a memory fact — after a random one of its write statements (the last one is
    ``JournalApplied``: the event is in the file, the transaction not committed), then sync (which heals)
    and compare the journal with the database: every whole event applied once (JournalApplied rows =
    events), no row doubled. At the end of each case the folder is rebuilt into an empty database and
    its ``dump_book`` must equal the live one's."""

    def setup(case: str, i: int) -> tuple[str, ...]:
        chapter = 1 + (i * 3) % chapters
        if case == "ingest":
            payload = workdir / f"journal-ingest-{i}.json"
            payload.write_text(json.dumps(_extraction(root, 7000 + i), ensure_ascii=False), encoding="utf-8")
            return ("ingest", slug, str(chapter), str(payload))
        if case in ("confirm", "merge"):  # an ingestion (not killed) that holds a name / adds two
            names = [f"{case}{i}甲", f"{case}{i}乙"]
            data = _extraction(root, 8000 + i)
            data["entities_new"] = [
                {"name": n, "type": "角色", "aliases": [], "confidence": 0.3 if case == "confirm" else 0.9}
                for n in names
            ]
            payload = workdir / f"journal-{case}-{i}.json"
            payload.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            child_run("ingest", slug, str(chapter), str(payload), db_url=db_url)
            return ("confirm", slug) if case == "confirm" else ("merge", slug, *names)
        return ("fact", slug, str(i))

    results: dict[str, dict[str, Any]] = {}
    for case in ("ingest", "confirm", "merge", "fact"):
        warm = child_run(*setup(case, -1), "--count-writes", db_url=db_url).stderr
        writes = int(next(line.split()[1] for line in warm.splitlines() if line.startswith("writes ")))
        tally = {"writes_per_op": writes, "kills": 0, "finished_before_kill": 0, "killed_after_append": 0}
        tally.update({"healed_by_sync": 0, "lost": 0, "doubled": 0, "sync_failures": 0})
        for i in range(rounds):
            args = setup(case, i)
            events_before = json.loads(child_run("journalcheck", slug, db_url=db_url).stdout)["events"]
            pause = workdir / f"journal-{case}-{i}.paused"
            try:
                child_kill_at_pause(
                    *args, db_url=db_url, pause_file=pause, pause_after=writes if i % 3 == 1 else rng.randint(1, writes)
                )
                tally["kills"] += 1
            except RuntimeError:  # fewer writes this time: it finished
                tally["finished_before_kill"] += 1
            killed = json.loads(child_run("journalcheck", slug, db_url=db_url).stdout)
            appended = killed["events"] > events_before
            tally["killed_after_append"] += appended and bool(killed["unapplied"])
            sync = child_run("sync", slug, db_url=db_url, check=False)
            report = json.loads(sync.stdout) if sync.stdout.strip().startswith("{") else {}
            tally["healed_by_sync"] += sum((report.get("journal") or {}).values())
            tally["sync_failures"] += sync.returncode != 0
            check = json.loads(child_run("journalcheck", slug, db_url=db_url).stdout)
            lost = len(check["unapplied"])
            doubled = check["marked_twice"] + check["entities_doubled"] + check["facts_doubled"]
            doubled += len(check["rows_without_event"])
            tally["lost"] += lost
            tally["doubled"] += doubled
            log = f"journal {case} #{i}: appended={appended} unapplied after kill {killed['unapplied']}"
            print(
                f"{log}; after sync events {check['events']} rows {check['applied_rows']} lost {lost} doubled {doubled}",
                file=sys.stderr,
                flush=True,
            )
        tally["events"], tally["applied_rows"] = check["events"], check["applied_rows"]
        fresh = f"sqlite:///{workdir / f'fresh-{case}.sqlite3'}"
        child_run("migrate", db_url=fresh)
        child_run("rebuild", str(root), db_url=fresh)
        live, rebuilt = (child_run("dumpbook", slug, db_url=u).stdout for u in (db_url, fresh))
        tally["rebuild_agrees"] = live == rebuilt
        if not tally["rebuild_agrees"]:
            for label, text in (("live", live), ("rebuilt", rebuilt)):
                (workdir / f"journal-{case}-{label}.json").write_text(text, encoding="utf-8")
        results[case] = tally
    return results


def main(argv: list[str]) -> int:
    if argv and argv[0] == "child":
        return child_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 kills per operation on a 60-chapter book")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--kills", type=int, default=10, help="kills per operation")
    parser.add_argument("--chapters", type=int, default=300, help="chapters of the synthetic book")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--ops",
        default="rebuild,sync,ingest,memory,concurrent,journal",
        help="operations (comma-separated): rebuild, sync, ingest are killed; memory = logged pack + edit + delete"
        " + sync (killed in half the rounds); concurrent = ingestion during a rebuild; journal = journaled writes"
        " (ingest, confirm, merge, fact) killed inside their transaction, then sync, journal vs database",
    )
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.kills, opts.chapters = 3, 60
    from bench.common import book_copy, synthetic_book

    rng = random.Random(opts.seed)
    workdir = Path(tempfile.mkdtemp(prefix="wn-faults-"))
    db_url = os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'faults.sqlite3'}"
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    load_start = os.getloadavg()[0]
    child_run("migrate", db_url=db_url)
    if os.environ.get("DATABASE_URL"):
        subprocess.run([sys.executable, "manage.py", "flush", "--noinput"], env=child_env(db_url), cwd=REPO, check=True)
    root = book_copy(synthetic_book(opts.chapters, seed=1), workdir)
    slug = root.name
    t0 = time.monotonic()
    child_run("rebuild", str(root), db_url=db_url)
    durations = {"rebuild": time.monotonic() - t0}
    log(f"rebuild of {opts.chapters} chapters: {durations['rebuild']:.1f}s")
    # the slug of a generated book is in its book.yaml
    import yaml

    slug = yaml.safe_load((root / "book.yaml").read_text(encoding="utf-8")).get("slug") or root.name

    ops = {
        "rebuild": lambda i: (_edit(root, 1 + i % opts.chapters, i), ("rebuild", str(root)))[1],
        "sync": lambda i: (_edit(root, 1 + (i * 7) % opts.chapters, 1000 + i), ("sync", slug))[1],
    }

    def ingest(i: int) -> tuple[str, ...]:
        payload = workdir / f"extraction-{i}.json"
        payload.write_text(json.dumps(_extraction(root, i), ensure_ascii=False), encoding="utf-8")
        return ("ingest", slug, str(1 + i % opts.chapters), str(payload))

    ops["ingest"] = ingest
    results: dict[str, dict[str, Any]] = {}
    for name, prepare in ops.items():
        if name not in opts.ops.split(","):
            continue
        args = prepare(-1)
        t0 = time.monotonic()
        child_run(*args, db_url=db_url)
        durations[name] = time.monotonic() - t0
        tally = {
            "kills": 0,
            "killed_mid_run": 0,
            "finished_before_kill": 0,
            "state_before": 0,
            "state_after": 0,
            "hooks_interrupted": 0,
            "mixed_states": 0,
            "rerun_failures": 0,
        }
        for i in range(opts.kills):
            args = prepare(i)
            before = dump(db_url)
            delay = rng.uniform(0.0, 1.2 * durations[name])
            running = child_kill_after(*args, db_url=db_url, delay=delay)
            after_kill = dump(db_url)
            rerun = child_run(*args, db_url=db_url, check=False)
            after = dump(db_url)
            tally["kills"] += 1
            tally["killed_mid_run" if running else "finished_before_kill"] += 1
            state = _classify(after_kill, before, after)
            tally[state] += 1
            if state == "mixed_states":  # keep the evidence
                for label, text in (("before", before), ("killed", after_kill), ("after", after)):
                    (workdir / f"mixed-{name}-{i}-{label}.json").write_text(text, encoding="utf-8")
                opts.keep = True
            if rerun.returncode != 0:
                tally["rerun_failures"] += 1
            log(f"{name} #{i}: kill at {delay:.2f}s running={running} state={state}")
        results[name] = {"seconds_per_run": round(durations[name], 2), **tally}
    scenarios: dict[str, dict[str, Any]] = {}
    common = {"root": root, "slug": slug, "db_url": db_url, "chapters": opts.chapters, "rounds": opts.kills, "rng": rng}
    if "memory" in opts.ops.split(","):
        scenarios["memory"] = memory_rounds(**common, workdir=workdir)
    if "concurrent" in opts.ops.split(","):
        scenarios["concurrent"] = concurrent_rounds(**common, workdir=workdir)
    journal = journal_rounds(**common, workdir=workdir) if "journal" in opts.ops.split(",") else {}
    figures = {
        "database": db_url.split(":", 1)[0],
        "chapters": opts.chapters,
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "operations": results,
        "scenarios": scenarios,
        "journal": journal,
        "crashes_survived": sum(r["killed_mid_run"] for r in results.values())
        if not any(r["mixed_states"] or r["rerun_failures"] for r in results.values())
        else 0,
    }
    if opts.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
    else:
        print(f"kill -9 faults on {figures['database']}, {opts.chapters} chapters, load {figures['load_average']}")
        for name, r in results.items():
            print(
                f"  {name:8} {r['seconds_per_run']:6.2f}s/run  kills {r['kills']}  mid-run {r['killed_mid_run']}  "
                f"before {r['state_before']}  after {r['state_after']}  hooks interrupted {r['hooks_interrupted']}  "
                f"mixed states {r['mixed_states']}  rerun failures {r['rerun_failures']}"
            )
        print(f"  crashes survived: {figures['crashes_survived']}")
        for name, r in scenarios.items():
            print(f"  {name:10} " + "  ".join(f"{k} {v}" for k, v in r.items()))
        for name, r in journal.items():
            print(f"  journal {name:8} " + "  ".join(f"{k} {v}" for k, v in r.items()))
    if not opts.keep:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    bad = any(r["mixed_states"] or r["rerun_failures"] for r in results.values())
    bad = bad or any(
        r.get(k)
        for r in scenarios.values()
        for k in (
            "sync_failures",
            "hook_failures",
            "stale_after",
            "rebuild_failures",
            "ingest_failures",
            "extractions_lost",
        )
    )
    bad = bad or any(
        r["lost"] or r["doubled"] or r["sync_failures"] or not r["rebuild_agrees"] for r in journal.values()
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
