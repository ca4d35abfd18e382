"""The write registry (issue 28, ``kernel/journal_ops.py``): every journaled op declared once, in its own
app, with its replayer; the rebuilder replays and heals through it and imports no app's services."""

import ast
import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

import bookfiles.rebuilder.journal_replay as replay_module
from bookfiles.rebuilder import book_rebuild
from core import journal as core_journal
from core.journal import LOG_PATH, journal_events
from core.models import Book, JournalApplied
from entities.models import PendingItem
from entities.services.ingest import extraction_ingest, extraction_parse
from kernel import journal_ops
from kernel.exceptions import InvalidInput
from kernel.journal_ops import journal_op, journal_op_get, journal_ops_load, journal_ops_register
from tests.conftest import DEMO_BOOK_SOURCE
from webnovel.demo import DEMO_EXTRACTIONS, demo_extractions_ingest

# every op a service journals today (grep ``op="`` in entities/, memory/, storysystem/)
OPS = {
    "extraction.ingest": "entities",
    "pending.confirm": "entities",
    "pending.reject": "entities",
    "entity.merge": "entities",
    "entities.archive": "entities",
    "aliases.generic": "entities",
    "state_change.record": "entities",
    "entity.create": "entities",
    "entity.edit": "entities",
    "alias.save": "entities",
    "alias.delete": "entities",
    "state_change.edit": "entities",
    "state_change.delete": "entities",
    "relationship.save": "entities",
    "relationship.delete": "entities",
    "legacy.state.import": "entities",
    "discovery.queue": "entities",
    "discovery.merge": "entities",
    "discovery.split": "entities",
    "memory.fact.observe": "memory",
    "memory.fact.revise": "memory",
    "memory.fact.close": "memory",
    "memory.fact.decide": "memory",
    "memory.import": "memory",
    "story.setting.save": "storysystem",
}


@pytest.fixture
def no_hooks():
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        yield


@pytest.fixture
def folder(tmp_path) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / "demo-book", ignore=shutil.ignore_patterns(".journal")))


def test_every_op_is_declared_once_in_the_app_that_writes_it():
    registry = journal_ops_load()
    assert {op: declared.app for op, declared in registry.items()} == OPS
    for op, declared in registry.items():
        # the service that journals it is the owning app's, and so is its replayer
        assert declared.service is not None and declared.service.__module__.split(".")[0] == OPS[op], op
    assert journal_op_get("extraction.ingest").schema == "entities.schemas:ExtractionIn"
    assert journal_op_get("memory.fact.observe").schema == "memory.schemas:FactIn"
    assert journal_op_get("no.such.op") is None


def test_the_registry_refuses_an_op_declared_twice():
    journal_ops_load()
    before = dict(journal_ops.REGISTRY)

    def _another_merge(book, data, event):  # a second replayer for an op entities already declares
        raise AssertionError("never called")

    try:
        with pytest.raises(RuntimeError, match="'entity.merge' registered twice"):
            journal_op("entity.merge")(_another_merge)
        assert journal_ops.REGISTRY["entity.merge"].replay.__module__ == "entities.journal_ops"
    finally:
        journal_ops.REGISTRY.clear()
        journal_ops.REGISTRY.update(before)


def test_an_app_registers_only_its_own_module():
    # called from this test module (the ``tests`` package): another app's module is refused
    with pytest.raises(RuntimeError, match="outside tests's app"):
        journal_ops_register("entities.journal_ops")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_the_replay_imports_no_app_service():
    modules = _imported_modules(Path(replay_module.__file__))
    apps = {m.split(".")[0] for m in modules}
    # the journal's mechanics (core.journal, core.models.Book), the kernel, Django and the standard library
    assert apps <= {"core", "kernel", "django", "logging", "pathlib", "typing"}, sorted(modules)
    assert {m for m in modules if m.startswith("core")} == {"core.journal", "core.models"}
    assert not hasattr(replay_module, "REPLAYERS")


def test_the_healer_is_registered_by_bookfiles_not_by_a_setting():
    assert not hasattr(settings, "WEBNOVEL_JOURNAL_HEALER")
    assert core_journal._healer == "bookfiles.rebuilder.journal_replay.journal_heal_apply"


@pytest.mark.django_db
@pytest.mark.usefixtures("no_hooks")
def test_every_op_of_the_demo_journal_has_a_replayer_and_comes_back(folder):
    assert book_rebuild(root=folder)["ok"]
    book = Book.objects.get(slug="demo-book")
    demo_extractions_ingest(book=book)
    ops = [e["op"] for e in journal_events(root=folder)]
    assert set(ops) == {"extraction.ingest"} and len(ops) == len(list(DEMO_EXTRACTIONS.glob("*.json")))
    assert all(journal_op_get(op) is not None for op in ops)
    held = PendingItem.objects.filter(book=book, status="pending").count()
    Book.objects.filter(slug="demo-book").delete()
    report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    assert report["journal"] == {"extraction.ingest": len(ops)}
    assert PendingItem.objects.filter(book__slug="demo-book", status="pending").count() == held == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("no_hooks")
def test_a_crashed_writers_event_is_healed_through_the_registered_healer(folder):
    assert book_rebuild(root=folder)["ok"]
    book = Book.objects.get(slug="demo-book")
    payload = extraction_parse(raw=(DEMO_EXTRACTIONS / "第0006章.json").read_bytes())
    extraction_ingest(book=book, number=6, payload=payload)
    held = PendingItem.objects.get(book=book, kind="uncertain", status="pending")
    # the writer died after its line and before its commit: the line is there, its rows and mark are not
    line = {"seq": 2, "op": "pending.reject", "chapter": 6, "kind": "uncertain", "payload": held.payload, "note": "x"}
    with (folder / LOG_PATH).open("a", encoding="utf-8") as log:
        log.write(json.dumps(line, ensure_ascii=False) + "\n")
    assert core_journal.journal_heal(book=book) == {"pending.reject": 1}
    assert PendingItem.objects.get(pk=held.pk).status == "rejected"
    assert JournalApplied.objects.filter(book=book, seq=2).exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("no_hooks")
def test_an_op_no_app_declares_stops_the_rebuild_naming_its_line(folder):
    assert book_rebuild(root=folder)["ok"]
    book = Book.objects.get(slug="demo-book")
    extraction_ingest(
        book=book, number=3, payload=extraction_parse(raw=(DEMO_EXTRACTIONS / "第0003章.json").read_bytes())
    )
    with (folder / LOG_PATH).open("a", encoding="utf-8") as log:
        log.write(json.dumps({"seq": 2, "op": "nobody.knows", "chapter": 3}) + "\n")
    Book.objects.filter(slug="demo-book").delete()
    with pytest.raises(InvalidInput, match="第3行（seq 2，nobody.knows）：未知操作 'nobody.knows'"):
        book_rebuild(root=folder)
    assert not Book.objects.filter(slug="demo-book").exists()


def test_the_agents_tools_of_declared_writes_come_from_their_declaration():
    from agents.writes import write_tools

    doors = {declared.door.tool: declared for declared in journal_ops_load().values() if declared.door is not None}
    assert sorted(doors) == ["memory-fact-add", "pending-confirm", "pending-reject", "story-system-build"]
    tools = write_tools()
    for name, declared in doors.items():
        tool = tools[name].tool()
        assert tool["description"] == declared.door.description
        # the input is the REST body's schema (plus REST's pk path parameter)
        module, _, attr = declared.schema.partition(":")
        body = getattr(__import__(module, fromlist=[attr]), attr).model_json_schema(by_alias=True)
        assert set(tool["inputSchema"]["properties"]) == set(body["properties"]) | (
            {"pk"} if declared.door.pk else set()
        )
    assert list(tools)[3:7] == ["pending-confirm", "pending-reject", "memory-fact-add", "story-system-build"]


def test_a_new_door_takes_the_place_its_declaration_gives(monkeypatch):
    """The tools' order is declared by each door (``WriteDoor.order``): a new write does not touch agents/."""
    from agents.writes import write_tools
    from kernel.journal_ops import JournalOp, WriteDoor

    journal_ops_load()
    door = WriteDoor(
        tool="x-note",
        description="测试",
        run=lambda book, body: {},
        response="entities.schemas:ResolutionOut",
        order=25,
    )
    declared = JournalOp(op="x.note", replay=lambda *a: None, schema="entities.schemas:PendingRejectIn", door=door)
    monkeypatch.setitem(journal_ops.REGISTRY, "x.note", declared)
    names = list(write_tools())
    assert names[3:8] == ["pending-confirm", "pending-reject", "x-note", "memory-fact-add", "story-system-build"]


def test_the_rest_posts_of_declared_writes_come_from_their_declaration():
    """The POST of a door with a ``path`` is generated (webnovel/api.py::writes_mount), none is hand-written."""
    import entities.api
    import memory.api
    import storysystem.api
    from webnovel.api import api

    spec = api.get_openapi_schema()
    doors = [declared for declared in journal_ops_load().values() if declared.door and declared.door.path]
    assert sorted(d.door.path for d in doors) == [
        "/entities/pending/{pk}/confirm",
        "/entities/pending/{pk}/reject",
        "/memory/facts",
        "/story-system/build",
    ]
    for declared in doors:
        door = declared.door
        operation = spec["paths"]["/api/books/{book}" + door.path]["post"]
        assert operation["operationId"] == f"{declared.app}_api_{door.name}"
        assert operation["summary"] == door.summary
        body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert body == "#/components/schemas/" + declared.schema.partition(":")[2]
        answer = operation["responses"][str(door.status)]["content"]["application/json"]["schema"]["$ref"]
        assert answer == "#/components/schemas/" + door.response.partition(":")[2]
        assert [p["name"] for p in operation["parameters"]] == ["book", *(["pk"] if door.pk else [])]
    assert spec["paths"]["/api/books/{book}/memory/facts"]["post"]["responses"]["201"]
    for module in (entities.api, memory.api, storysystem.api):
        assert not {"pending_confirm", "pending_reject", "fact_observe", "story_build"} & set(vars(module))


def test_indexers_hooks_and_reporters_are_registrations_the_apps_make():
    from kernel import indexing

    for name in (indexing.INDEXERS, indexing.HOOKS, indexing.REPORTERS):
        assert not hasattr(settings, name), name  # no dotted path in the project's settings
    assert indexing.registered(indexing.INDEXERS) == [
        "core.search.search_index_update",
        "entities.mentions.mentions_index",
    ]
    # recall is installed before memory: memory's hybrid recall finds the new chapter's vectors
    assert indexing.registered(indexing.HOOKS) == [
        "recall.pipeline.recall_after_chapter",
        "memory.pipeline.memory_after_chapter",
        "memory.fact_recall.facts_after_chapter",  # after memory's own: the facts it derived
    ]
    assert indexing.registered(indexing.REPORTERS) == ["continuity.retcon.canon_change_report"]
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):  # a test's override
        assert indexing.registered(indexing.HOOKS) == []
    with pytest.raises(RuntimeError, match="outside tests's app"):
        indexing.after_chapter_hook_register("memory.pipeline.memory_after_chapter")
