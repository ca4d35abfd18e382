"""Both front doors give the same answer: for every interface in the registry, ``story <name>
demo-book …`` and the REST path declared in its ``rest=`` return identical JSON (or text) for the
same inputs — or the same error message with the same status family.

Inputs come from SAMPLES (interface → argument values); an interface whose required arguments have
no sample is reported as skipped, so a new interface shows up here until it is given one."""

import json
import re
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import Book
from kernel.interfaces import interfaces_load
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db

# Sample inputs on the demo book. Values are strings, as typed on a command line.
SAMPLES: dict[str, dict[str, str]] = {
    # threads and secrets
    "thread": {"thread_id": "悬念-001"},
    "thread-history": {"thread_id": "伏笔-001"},
    "thread-closing-plan": {"thread_id": "伏笔-001"},
    "thread-description": {"thread_id": "伏笔-003"},
    "thread-list": {"type": "伏笔", "status": "进行"},
    "thread-by-strength": {"strength": "高"},
    "secret": {"secret_id": "信息差-003"},
    "secret-content": {"secret_id": "信息差-002"},
    "report-thread-activity": {"volume": "1"},
    # chapters
    "chapter": {"number": "22"},
    "chapter-body": {"number": "5"},
    "chapter-tail": {"number": "3", "chars": "120"},
    "chapter-head": {"number": "3", "chars": "80"},
    "chapter-summary": {"number": "12"},
    "chapter-summaries": {"start": "10", "end": "14"},
    "chapter-recent-tails": {"count": "3", "chars": "200", "before": "20"},
    "chapter-list": {"position": "推进", "volume": "1"},
    # outlines and timelines
    "outline-section": {"heading": "人物弧光"},
    "volume-outline": {"volume": "2"},
    "volume-outline-section": {"volume": "1", "heading": "主要事件"},
    "timeline-volume": {"volume": "1"},
    "timeline-character": {"name": "林小子"},
    # settings
    "character": {"name": "苏师姐"},
    "character-card": {"name": "林风"},
    "character-section": {"name": "林风", "heading": "性格"},
    "alias-resolve": {"alias": "小风"},
    "character-list": {"status": "存活"},
    "worldview-section": {"heading": "雾海"},
    # search and reports
    "search": {"q": "断剑", "limit": "5"},
    "search-regex": {"pattern": "青岚[子宗]", "limit": "5"},
    "report-style-drift": {"last": "8"},
    "leak-scan": {"limit": "5"},
    # other apps' interfaces (entities)
    "entity": {"ref": "林风"},
    "entity-by-alias": {"alias": "白鹭"},
    "entity-changes": {"ref": "linfeng"},
    "entity-relationships": {"ref": "linfeng"},
    "entity-graph": {"ref": "linfeng"},
    "entity-graph-mermaid": {"ref": "linfeng"},
    "entity-appearances": {"ref": "linfeng"},
    "extraction": {"number": "1"},
    "entity-ancestors": {"ref": "剑冢"},
    "entity-descendants": {"ref": "雾海"},
    "entity-within": {"ref": "白鹭洲", "container": "雾海"},
    # memory and story-system (the integrator's samples; adjust when those interfaces change)
    "context": {"number": "25"},
    "context-diff": {"a": "24", "b": "25"},
    "story-system-chapter": {"number": "1"},
    "story-system-effective": {"number": "1"},
    "story-system-search": {"q": "剑"},
    "memory-fact": {"key": "s-037e752c08526b8e"},  # 信息差-001 保密 on the demo book
    "continuity-chapters": {"start": "20", "end": "24"},
}

_PATH_PARAM = re.compile(r"{(\w+)}")


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    from bookfiles.rebuilder import book_rebuild

    with django_db_blocker.unblock():
        assert book_rebuild(root=DEMO_BOOK)["ok"]
        yield Book.objects.get(slug="demo-book")
        Book.objects.filter(slug="demo-book").delete()


def _cli(name: str, spec, values: dict[str, str]) -> tuple[int, object]:
    argv = [name, "demo-book"]
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
        return 400, str(exc)
    text = out.getvalue()
    if spec.text:
        return 200, text.rstrip("\n")
    return 200, json.loads(text)


def _rest(client, spec, values: dict[str, str]) -> tuple[int, object]:
    method, template = spec.rest.split(" ", 1)
    assert method == "GET"
    used = set(_PATH_PARAM.findall(template))
    path = _PATH_PARAM.sub(
        lambda m: "demo-book" if m.group(1) == "book" else quote(values[m.group(1)], safe=""), template
    )
    query = {k: v for k, v in values.items() if k not in used}
    resp = client.get(path, query)
    body = resp.json()
    if resp.status_code >= 400:
        return 400, body["message"]
    if spec.text:
        return 200, body.rstrip("\n")
    return 200, body


def _cases():
    return sorted(interfaces_load())


@pytest.mark.parametrize("name", _cases())
def test_cli_and_rest_give_the_same_answer(demo, api, name):
    spec = interfaces_load()[name]
    assert spec.rest, f"interface {name} declares no rest= path"
    values = SAMPLES.get(name, {})
    missing = [a.name for a in spec.args if a.required and a.name not in values]
    if missing:
        pytest.skip(f"no sample input for {name}: {missing}")
    cli_status, cli_answer = _cli(name, spec, values)
    rest_status, rest_answer = _rest(api, spec, values)
    assert (cli_status, cli_answer) == (rest_status, rest_answer)


READS = (
    # threads 7, secrets 3
    "thread", "thread-history", "thread-closing-plan", "thread-description", "thread-overdue", "thread-list",
    "thread-by-strength", "secret", "secret-content", "secret-unknown",
    # outlines 5, chapters 8
    "outline-section", "outline-ending", "volume-outline", "volume-outline-section", "volume-list",
    "chapter", "chapter-body", "chapter-tail", "chapter-head", "chapter-summary", "chapter-summaries",
    "chapter-recent-tails", "chapter-list",
    # timeline 4, settings 6, search 2
    "timeline-current", "timeline-recent", "timeline-volume", "timeline-character",
    "character", "character-card", "character-section", "alias-resolve", "character-list", "worldview-section",
    "search", "search-regex",
    # reports 6 + the leak scan
    "report-overdue", "report-secrets", "report-style-drift", "report-thread-activity", "report-weak-hooks",
    "report-stats", "leak-scan",
)  # fmt: skip


def test_the_41_reads_and_the_leak_scan_are_registered_with_samples():
    registry = interfaces_load()
    assert len(READS) == 42
    assert [n for n in READS if n not in registry] == []
    unsampled = [n for n in READS if any(a.required and a.name not in SAMPLES.get(n, {}) for a in registry[n].args)]
    assert unsampled == []
    assert all(registry[n].rest.startswith("GET /api/books/{book}/") for n in READS)
