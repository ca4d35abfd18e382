"""Record every answer a newcomer can get, to prove a refactor changed none of them.

    python bench/record_answers.py OUT.json [--chapters 3000] [--compare OLD.json]

Into a throwaway SQLite database it loads the demo book the way ``make run`` does (``demo_setup``:
rebuild + the sample extractions) and a synthetic book (bench/gen_book.py, seed 1, 3,000 chapters by
default), then records, for each book:

- ``dump_book`` (the management command's output, byte for byte);
- every read interface of the registry, through the ``story`` CLI and through its REST path, with
  sample inputs (the demo book's are tests/core/test_interfaces_parity.py's; the synthetic
  book's are picked from its own tables), answers and error messages alike.

Only commands, URLs and the registry are used, never a module path, so the same script runs on the
tree before and after files move. ``--compare`` prints every answer that differs and exits 1 if any
does. Parameter renames are mapped in RENAMED (old name → new name) so an input reaches the same
argument under its new name.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from io import StringIO
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RENAMED = {"chapter": "number", "budget": "budget_tokens"}
_PATH_PARAM = re.compile(r"{(\w+)}")
# Wall-clock stamps (a fact's updated_at, a hit's built_at) differ between any two runs: not an answer.
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


def _unstamped(text: str) -> str:
    return _STAMP.sub("<time>", text)


def _setup(tmp: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'answers.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _synthetic_samples(slug: str) -> dict[str, dict[str, str]]:
    from django.apps import apps

    book = apps.get_model("webnovel", "Book").objects.get(slug=slug)
    thread = apps.get_model("threads", "Thread").objects.filter(book=book).order_by("thread_id").first()
    secret = apps.get_model("threads", "Secret").objects.filter(book=book).order_by("secret_id").first()
    entity = apps.get_model("entities", "Entity").objects.filter(book=book, type="角色").order_by("entity_id").first()
    alias = apps.get_model("entities", "Alias").objects.filter(entity=entity).order_by("alias").first()
    last = apps.get_model("webnovel", "Chapter").objects.filter(book=book).order_by("-number").first()
    mid = str(max(1, (last.number if last else 2) // 2))
    name = entity.canonical_name if entity else "无名"
    return {
        "thread": {"thread_id": thread.thread_id} if thread else {},
        "thread-history": {"thread_id": thread.thread_id} if thread else {},
        "thread-closing-plan": {"thread_id": thread.thread_id} if thread else {},
        "thread-description": {"thread_id": thread.thread_id} if thread else {},
        "thread-list": {"type": "伏笔", "status": "进行"},
        "thread-by-strength": {"strength": "高"},
        "secret": {"secret_id": secret.secret_id} if secret else {},
        "secret-content": {"secret_id": secret.secret_id} if secret else {},
        "report-thread-activity": {"volume": "1"},
        "chapter": {"number": mid},
        "chapter-body": {"number": mid},
        "chapter-tail": {"number": mid, "chars": "120"},
        "chapter-head": {"number": mid, "chars": "80"},
        "chapter-summary": {"number": mid},
        "chapter-summaries": {"start": mid, "end": str(int(mid) + 20)},
        "chapter-recent-tails": {"count": "3", "chars": "200"},
        "chapter-list": {"volume": "2"},
        "outline-section": {"heading": "人物弧光"},
        "volume-outline": {"volume": "2"},
        "volume-outline-section": {"volume": "1", "heading": "主要事件"},
        "timeline-volume": {"volume": "1"},
        "timeline-character": {"name": name},
        "character": {"name": name},
        "character-card": {"name": name},
        "character-section": {"name": name, "heading": "性格"},
        "alias-resolve": {"alias": alias.alias if alias else name},
        "character-list": {},
        "worldview-section": {"heading": "地理"},
        "search": {"q": name, "limit": "5"},
        "search-regex": {"pattern": name[:1] + "[^，]{1,2}", "limit": "5"},
        "report-style-drift": {"last": "8"},
        "leak-scan": {"limit": "5"},
        "entity": {"ref": name},
        "entity-by-alias": {"alias": alias.alias if alias else name},
        "entity-changes": {"ref": entity.entity_id if entity else name},
        "entity-relationships": {"ref": entity.entity_id if entity else name},
        "entity-graph": {"ref": entity.entity_id if entity else name},
        "entity-graph-mermaid": {"ref": entity.entity_id if entity else name},
        "entity-appearances": {"ref": entity.entity_id if entity else name},
        "extraction": {"chapter": "1"},
        "context": {"number": mid},
        "context-diff": {"a": mid, "b": str(int(mid) + 1)},
        "story-system-chapter": {"chapter": "1"},
        "story-system-effective": {"chapter": "1"},
        "story-system-search": {"q": "剑"},
        "memory-fact": {"key": "不存在"},
    }


def _values(spec, sample: dict[str, str]) -> dict[str, str]:
    names = {a.name for a in spec.args}
    out = {}
    for key, value in sample.items():
        out[RENAMED.get(key, key) if key not in names else key] = value
    return out


def _cli(slug: str, name: str, spec, values: dict[str, str]):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    argv = [name, slug]
    for arg in spec.args:
        if arg.name not in values:
            continue
        if arg.positional:
            argv.append(values[arg.name])
        else:
            argv += ["--" + arg.name.replace("_", "-"), values[arg.name]]
    out, err = StringIO(), StringIO()
    try:
        call_command("story", *argv, stdout=out, stderr=err)
    except CommandError as exc:
        return {"error": _unstamped(str(exc))}
    return {"out": _unstamped(out.getvalue())}


def _rest_path(spec) -> str:
    rest = getattr(spec, "rest", "") or f"{spec.method} {spec.path}"
    return rest.split(" ", 1)[1]


def _rest(client, slug: str, spec, values: dict[str, str]):
    template = _rest_path(spec)
    used = set(_PATH_PARAM.findall(template))
    path = _PATH_PARAM.sub(lambda m: slug if m.group(1) == "book" else quote(values[m.group(1)], safe=""), template)
    query = {k: v for k, v in values.items() if k not in used}
    resp = client.get(path, query)
    return {"status": resp.status_code, "body": _unstamped(resp.content.decode("utf-8"))}


def registry_load() -> dict:
    # The registry's module moves with the house plan (issue 13); the script runs on both trees.
    try:
        from kernel.interfaces import interfaces_load
    except ImportError:
        from kernel.interfaces import interfaces_load
    return interfaces_load()


def _record(slug: str, samples: dict[str, dict[str, str]], client) -> dict:
    from django.core.management import call_command

    out = StringIO()
    call_command("dump_book", slug, stdout=out)
    answers: dict = {"dump_book": out.getvalue(), "reads": {}}
    for name, spec in sorted(registry_load().items()):
        values = _values(spec, samples.get(name, {}))
        if any(a.required and a.name not in values for a in spec.args):
            answers["reads"][name] = {"skipped": "no sample"}
            continue
        answers["reads"][name] = {"cli": _cli(slug, name, spec, values), "rest": _rest(client, slug, spec, values)}
    return answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--chapters", type=int, default=3000)
    parser.add_argument("--compare", type=Path, help="an earlier recording: list what differs")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="wn-answers-"))
    try:
        _setup(tmp)
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client

        from bench.common import synthetic_book
        from tests.core.test_interfaces_parity import SAMPLES

        # --reset: what an earlier recording (or `make run`) wrote into var/demo-book is not replayed
        call_command("demo_setup", "--reset", stdout=StringIO())
        root = synthetic_book(args.chapters)
        call_command("rebuild", str(root), stdout=StringIO())
        print(f"synthetic book: {root}")
        from django.apps import apps

        synthetic = apps.get_model("webnovel", "Book").objects.exclude(slug="demo-book").get().slug
        user = get_user_model().objects.create_superuser(username="recorder", email="", password="x")
        client = Client()
        client.force_login(user)
        record = {
            "demo-book": _record("demo-book", SAMPLES, client),
            "synthetic": _record(synthetic, _synthetic_samples(synthetic), client),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.write_text(json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    reads = sum(len(b["reads"]) for b in record.values())
    print(f"recorded {reads} reads and 2 dumps into {args.out}")
    if not args.compare:
        return 0
    old = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = 0
    for book, answers in old.items():
        new = record.get(book, {})
        if answers["dump_book"] != new.get("dump_book"):
            differ += 1
            print(f"DIFFERS {book} dump_book")
        for name, answer in answers["reads"].items():
            if new.get("reads", {}).get(name) != answer:
                differ += 1
                print(
                    f"DIFFERS {book} {name}\n  old: {str(answer)[:300]}\n  new: {str(new.get('reads', {}).get(name))[:300]}"
                )
        for name in sorted(set(new.get("reads", {})) - set(answers["reads"])):
            print(f"NEW {book} {name}")
    same = sum(len(a["reads"]) + 1 for a in old.values()) - differ
    print(f"{same} identical, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
