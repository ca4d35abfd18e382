"""Peak memory of refusing an oversized memory write (issue 25), against the tree before, in one run.

    python bench/bench_fact_size.py --base /path/to/tree-before [--mb 100]

A value of ``--mb`` MB (UTF-8, 剑 repeated) is over the journal's 16 MB cap for one event, so both trees
refuse it (``journal_event_too_large``); the tree before built the fact's rows first. Each tree runs in a
fresh process (``ru_maxrss`` is a high-water mark for a process's whole life), on a copy of the demo book
rebuilt into a fresh SQLite file, through two doors: ``memory_import`` of a scratchpad file holding the
value (the CLI) and ``fact_observe`` (the service REST, MCP and the dashboard call). Printed: peak RSS before
the write (setup: Django, the rebuilt demo, the value held once), after it, and what the write added.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO  # noqa: E402

CHILD = r"""
import json, os, resource, shutil, sys
from pathlib import Path
args = json.loads(sys.argv[1])
sys.path.insert(0, args["repo"])
os.environ["DJANGO_SETTINGS_MODULE"] = "webnovel.settings"
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from bookfiles.rebuilder import book_rebuild
from core.models import Book
from kernel.exceptions import InvalidInput
root = Path(args["tmp"]) / "demo-book"
shutil.copytree(Path(args["repo"]) / "examples" / "demo-book", root, ignore=shutil.ignore_patterns(".journal"))
assert book_rebuild(root=root)["ok"]
book = Book.objects.get(slug="demo-book")
value = "剑" * (args["mb"] * (1 << 20) // 3)
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {}
if args["door"] == "import":
    path = Path(args["tmp"]) / "memory_scratchpad.json"
    path.write_text(json.dumps({"world_rules": [{"subject": "断剑", "field": "来历", "value": value}]}, ensure_ascii=False), encoding="utf-8")
    del value
    out["before"] = peak()
    try:
        call_command("memory_import", "demo-book", str(path))
        out["refused"] = False
    except Exception as exc:
        out["refused"] = "journal_event_too_large" in str(getattr(exc, "extra", "")) or "过大" in str(exc)
else:
    from memory.services import fact_observe
    out["before"] = peak()
    try:
        fact_observe(book=book, category="world_rules", subject="断剑", field="来历", value=value, chapter=1)
        out["refused"] = False
    except InvalidInput as exc:
        out["refused"] = exc.extra.get("code") == "journal_event_too_large"
out["after"] = peak()
print("RESULT " + json.dumps(out))
"""


def _run(tree: Path, door: str, mb: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="wn-bench-factsize-") as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "WEBNOVEL_DATA_DIR": f"{tmp}/var"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        args = json.dumps({"repo": str(tree), "tmp": tmp, "mb": mb, "door": door})
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, args], cwd=tree, env=env, capture_output=True, text=True, check=False
        )
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            raise SystemExit(f"{tree} ({door}) failed:\n{proc.stderr[-3000:]}")
        return json.loads(line[7:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the tree before")
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    print(f"one value of {args.mb} MB (UTF-8), over the 16 MB cap of one journal event; peak RSS in MB")
    for door in ("import", "observe"):
        for name, tree in (("before", args.base), ("this tree", REPO)):
            r = _run(tree, door, args.mb)
            added = r["after"] - r["before"]
            print(
                f"{door:8} {name:10} refused={r['refused']!s:5} before the write {r['before']:7.0f}"
                f"  peak {r['after']:7.0f}  the write added {added:6.0f}"
            )


if __name__ == "__main__":
    main()
