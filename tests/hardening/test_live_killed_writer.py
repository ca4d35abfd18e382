"""Live equals rebuild after a real killed writer (issue 24): a child process (``bench/bench_faults.py
child``: the CLI's ingest, a memory fact, a confirm) is SIGKILLed after a random write statement inside
its transaction, the next sync or the next writer heals it, and then, in another process, a sync with
nothing changed changes nothing and the live book equals a rebuild of its folder into an empty database
(every table, ids and timestamps aside, and ``dump_book``: tests/bookfiles/live_state.py).

The random points come from a fixed seed (the same kills every run); bench/bench_live_rebuild.py mixes
the same killed writer into its long run of every write door."""

import json
import random
import subprocess
import sys

import pytest

from bench.bench_faults import child_env, child_kill_at_pause, child_run
from tests.conftest import REPO
from webnovel.demo import DEMO_EXTRACTIONS

pytestmark = pytest.mark.slow

ORACLE = """
import json, sys
import django
django.setup()
from bookfiles.rebuilder import book_dump, book_sync
from core.models import Book
from tests.bookfiles.live_state import book_tables, live_and_rebuild, tables_diff
book = Book.objects.get(slug="demo-book")
before, dump = book_tables(book=book), book_dump(book=book)
report = book_sync(book=book)
after = book_tables(book=book)
tables, dump_diff = live_and_rebuild(slug="demo-book", root=sys.argv[1], before=after, dump_before=dump)
out = {"sync_ok": report["ok"], "sync_changed": tables_diff(before, after), "diverged": tables + dump_diff}
print(json.dumps(out, ensure_ascii=False))
"""


def _oracle(db_url: str, root) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", ORACLE, str(root)],
        env=child_env(db_url),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_writer_killed_at_a_random_write_then_healed_leaves_live_equal_to_a_rebuild(child_db, demo_copy, tmp_path):
    rng = random.Random(24)
    child_run("rebuild", str(demo_copy), db_url=child_db)
    killed = 0
    for i, (op, heal) in enumerate((("ingest", "sync"), ("confirm", "writer"), ("fact", "sync"), ("ingest", "writer"))):
        args: tuple[str, ...] = (op, "demo-book")
        if op == "ingest":
            chapter = rng.choice((6, 8))
            args += (str(chapter), str(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json"))
        elif op == "fact":
            args += (str(i),)
        try:
            rc = child_kill_at_pause(
                *args, db_url=child_db, pause_file=tmp_path / f"paused-{i}", pause_after=rng.randint(1, 12)
            )
            assert rc == -9
            killed += 1
        except RuntimeError:  # it made fewer writes than that: it finished
            pass
        if heal == "sync":
            assert json.loads(child_run("sync", "demo-book", db_url=child_db).stdout)["ok"]
        else:  # the next writer heals the journal before it writes
            child_run("fact", "demo-book", str(100 + i), db_url=child_db)
        state = _oracle(child_db, demo_copy)
        assert state["sync_ok"]
        assert state["sync_changed"] == [], "\n".join(state["sync_changed"])
        assert state["diverged"] == [], f"after {op} killed, healed by {heal}:\n" + "\n".join(state["diverged"])
    assert killed >= 3  # the seed's points fall inside each write (a point past its last write finishes it)
