"""Issue 14, items 1, 4 and 5: one owner for every field (a file's values are read-only in the admin,
naming the file), every curator edit journaled and replayed, a hand-edited extraction file picked up
by sync, and a crashed write healed before the next one writes."""

import json
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import override_settings

from bookfiles.rebuilder import book_dump, book_rebuild, book_sync
from core.journal import journal_events
from core.models import Book, Chapter, JournalApplied
from entities.models import Alias, Entity, PendingItem, Relationship, StateChange
from entities.services.curation import (
    alias_delete,
    alias_save,
    entity_add,
    entity_edit,
    relationship_delete,
    relationship_key,
    relationship_save,
    state_change_delete,
    state_change_edit,
)
from entities.services.ingest import extraction_ingest, extraction_parse
from entities.services.writes import state_change_curate
from kernel.exceptions import InvalidInput
from kernel.journal_ops import journal_ops_load
from memory.models import Fact
from memory.services import fact_decide, fact_observe, fact_revise, scratchpad_import
from storysystem.services import story_setting_build
from tests.bookfiles.test_journal import _session
from tests.conftest import DEMO_BOOK_SOURCE
from webnovel.demo import DEMO_EXTRACTIONS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hooks")]


@pytest.fixture
def no_hooks():
    with override_settings(WEBNOVEL_AFTER_CHAPTER_HOOKS=[]):
        yield


@pytest.fixture
def folder(tmp_path) -> Path:
    if not (DEMO_BOOK_SOURCE / "book.yaml").is_file():
        pytest.skip("the demo book is absent")
    return Path(shutil.copytree(DEMO_BOOK_SOURCE, tmp_path / "demo-book", ignore=shutil.ignore_patterns(".journal")))


@pytest.fixture
def curator(client):
    client.force_login(get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456"))
    return client


def _book() -> Book:
    return Book.objects.get(slug="demo-book")


def _payload(chapter: int) -> dict:
    return extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())


def _from_scratch(folder: Path) -> str:
    Book.objects.filter(slug="demo-book").delete()
    report = book_rebuild(root=folder)
    assert report["ok"], report["errors"]
    return book_dump(book=_book())


# --- item 4: one owner for every field ------------------------------------------------------------


def test_a_card_entity_is_read_only_in_the_admin_naming_its_file(folder, curator):
    assert book_rebuild(root=folder)["ok"]
    lin = Entity.objects.get(book=_book(), entity_id="linfeng")
    page = curator.get(f"/admin/entities/entity/{lin.pk}/change/").content.decode()
    assert "来自 设定/角色/林风.md 开头 --- 之间的设定，请在文件中修改" in page
    assert 'name="canonical_name"' not in page and 'name="tier"' not in page
    # a POST that tries anyway is refused whole, naming the file (issue 24: never a success message)
    response = curator.post(
        f"/admin/entities/entity/{lin.pk}/change/",
        {"canonical_name": "林疯", "tier": "装饰", "archived": "on", **_inline_management()},
        follow=True,
    )
    lin.refresh_from_db()
    assert (lin.canonical_name, lin.tier, lin.archived) == ("林风", "核心", False)
    (message,) = [str(m) for m in response.context["messages"]]
    assert message.startswith("未修改：") and "设定/角色/林风.md" in message
    assert journal_events(root=folder) == []
    # the curator's archive mark still works
    response = curator.post(f"/admin/entities/entity/{lin.pk}/change/", {"archived": "on", **_inline_management()})
    assert response.status_code == 302
    lin.refresh_from_db()
    assert (lin.canonical_name, lin.tier, lin.archived) == ("林风", "核心", True)
    assert [e["op"] for e in journal_events(root=folder)] == ["entities.archive"]
    # a roster entity names the roster; its aliases are listed read-only
    sect = Entity.objects.get(book=_book(), entity_id="loc_qinglanzong")
    page = curator.get(f"/admin/entities/entity/{sect.pk}/change/").content.decode()
    assert "来自 设定/名册.yaml，请在文件中修改" in page
    assert "别名（来自书籍文件，请在文件中修改）" in page
    alias = Alias.objects.get(entity=sect, alias="青岚山")
    assert curator.post(f"/admin/entities/alias/{alias.pk}/change/", {"alias": "青岚峰"}).status_code == 403
    alias.refresh_from_db()
    assert alias.alias == "青岚山"
    assert curator.post(f"/admin/entities/alias/{alias.pk}/delete/", {"post": "yes"}).status_code == 403


def _inline_management() -> dict:
    data = {}
    for prefix in ("aliases", "aliases-2", "state_changes", "relationships_out", "relationships_in"):
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    return data


def test_chapters_threads_and_the_book_are_read_only_naming_their_files(folder, curator):
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    chapter = Chapter.objects.get(book=book, number=3)
    page = curator.get(f"/admin/webnovel/chapter/{chapter.pk}/change/")
    assert page.status_code == 200
    assert f"来自 {chapter.source_path}，请在文件中修改" in page.content.decode()
    assert curator.post(f"/admin/webnovel/chapter/{chapter.pk}/change/", {"title": "改名"}).status_code == 403
    chapter.refresh_from_db()
    assert chapter.title != "改名"
    assert curator.get("/admin/webnovel/chapter/add/").status_code == 403
    thread = book.threads.get(thread_id="伏笔-002")
    page = curator.get(f"/admin/threads/thread/{thread.pk}/change/").content.decode()
    assert "来自 线索/伏笔-002 王伯的旧伤.md，请在文件中修改" in page
    page = curator.get(f"/admin/webnovel/book/{book.pk}/change/").content.decode()
    assert "来自 book.yaml，请在文件中修改" in page and 'name="title"' not in page


def test_an_ingested_entity_stays_editable_and_its_edit_is_journaled(folder, curator):
    assert book_rebuild(root=folder)["ok"]
    extraction_ingest(book=_book(), number=3, payload=_payload(3))
    made = Entity.objects.filter(book=_book()).exclude(source="file").order_by("entity_id").first()
    assert made is not None
    page = curator.get(f"/admin/entities/entity/{made.pk}/change/").content.decode()
    assert 'name="tier"' in page and "字段归属" not in page
    data = {
        "type": made.type,
        "canonical_name": made.canonical_name,
        "tier": "重要",
        "description": "校对补录",
        "base_state": json.dumps(made.base_state, ensure_ascii=False),
        **_inline_management(),
    }
    assert curator.post(f"/admin/entities/entity/{made.pk}/change/", data).status_code == 302
    made.refresh_from_db()
    assert (made.tier, made.description) == ("重要", "校对补录")
    assert journal_events(root=folder)[-1] | {"_line": 0} == {
        "seq": 2,
        "op": "entity.edit",
        "entity": made.entity_id,
        "changes": {"description": "校对补录", "tier": "重要"},
        "_line": 0,
    }


def test_a_services_refuse_a_file_owned_row_naming_the_file(folder):
    assert book_rebuild(root=folder)["ok"]
    lin = Entity.objects.get(book=_book(), entity_id="linfeng")
    with pytest.raises(InvalidInput) as err:
        entity_edit(entity=lin, changes={"tier": "装饰"})
    assert err.value.message == "实体 linfeng 来自 设定/角色/林风.md 开头 --- 之间的设定，请在文件中修改"
    with pytest.raises(InvalidInput) as err:
        alias_save(entity=lin, alias="小林", previous="小风")
    assert err.value.message == "别名 '小风' 来自 设定/角色/林风.md 开头 --- 之间的设定，请在文件中修改"
    assert not journal_events(root=folder)


# --- item 1: every curator edit journaled, and replayed -----------------------------------------


def _curation(book: Book) -> None:
    """Every edit the admin's change forms make, once or more, after ``_session``."""
    hermit = entity_add(book=book, name="云游道人", type="角色", tier="次要", description="山下遇见")
    entity_edit(entity=hermit, changes={"tier": "重要", "type": "角色", "base_state": {"境界": "金丹"}})
    lin = Entity.objects.get(book=book, entity_id="linfeng")
    alias_save(entity=hermit, alias="道人", note="第5章")
    alias_save(entity=hermit, alias="老道", valid_from=4, previous="道人")
    alias_save(entity=lin, alias="阿风哥")
    alias_delete(alias=Alias.objects.get(entity=lin, alias="阿风哥"))
    ingested = StateChange.objects.filter(book=book, source="extraction").order_by("chapter", "seq")
    first, second = ingested[0], ingested[1]
    state_change_edit(
        change=first, number=first.chapter, field=first.field, op=first.op, new=first.new, reason="人工订正"
    )
    state_change_delete(change=second)
    rel = relationship_save(
        book=book,
        key=None,
        from_entity=hermit,
        to_entity=lin,
        type="指点",
        events=[{"chapter": 5, "description": "道人指点林风剑意"}],
    )
    relationship_save(
        book=book,
        key=relationship_key(relationship=rel),
        from_entity=hermit,
        to_entity=lin,
        type="师徒",
        events=[
            {"chapter": 5, "description": "道人指点林风剑意"},
            {"chapter": 9, "description": "收为记名弟子"},
        ],
    )
    ingested_rel = Relationship.objects.filter(book=book).exclude(from_entity=hermit).order_by("pk").first()
    relationship_delete(relationship=ingested_rel)
    scratchpad_import(
        book=book,
        data={"character_state": [{"subject": "林风", "field": "佩剑", "value": "断剑青岚", "chapter": 3}]},
    )
    rule = fact_observe(book=book, category="world_rules", subject="青岚宗", field="门规", value="禁私斗", number=2)
    fact_revise(fact=rule, value="禁私斗，违者逐出", number=4, reason="第4章补充")
    fact_observe(book=book, category="active_constraints", subject="剑老", field="身份", value="残魂", number=3)
    other = fact_observe(book=book, category="active_constraints", subject="剑老", field="身份", value="祖师", number=3)
    other.refresh_from_db()
    assert other.status == Fact.Status.CONTRADICTED
    fact_decide(fact=other, note="以祖师为准")
    # the Story System: a persisted master, then chapter 9's override on top of it
    story_setting_build(book=book, number=None, query="玄幻 宗门 修炼", persist=True)
    story_setting_build(book=book, number=9, query="本章 打脸", overrides={"本章输出重点": "剑意初成"}, persist=True)


def test_every_op_is_journaled_and_a_rebuild_replays_all_of_them(folder):
    book = _session(folder)
    _curation(book)
    ops = [e["op"] for e in journal_events(root=folder)]
    # every replayer is exercised, every op has one (migrate_state's: below)
    # discovery's ops are replayed by tests/bookfiles/test_live_drifts.py (a discover of the demo book)
    assert set(ops) == set(journal_ops_load()) - {
        "legacy.state.import",
        "discovery.queue",
        "discovery.merge",
        "discovery.split",
    }
    before = book_dump(book=book)
    written = json.loads(before)["written"]
    assert [r["type"] for r in written["relationships"] if r["from_entity__entity_id"] == "yunyoudaoren"] == ["师徒"]
    assert [a["alias"] for a in written["aliases"] if a["entity__entity_id"] == "yunyoudaoren"] == ["老道"]
    assert "人工订正" in json.dumps(written["state_changes"], ensure_ascii=False)
    assert [f["subject"] for f in written["facts"] if f["origin"] == "import"] == ["林风"]
    assert len(written["relationships"]) == 3  # the session's 3, one deleted, one made
    settings = written["story_settings"]
    assert [(s["chapter"], s["query"]) for s in settings] == [(None, "玄幻 宗门 修炼"), (9, "本章 打脸")]
    assert settings[1]["overrides"] == {"本章输出重点": "剑意初成"}
    assert sorted(p.name for p in (folder / ".journal" / "story").iterdir())[0].startswith("MASTER_SETTING-")

    assert _from_scratch(folder) == before
    assert book_rebuild(root=folder)["journal"] == {}  # a rebuild over the rows applies nothing twice
    assert book_dump(book=_book()) == before


# --- item 5: a hand edit of an applied extraction file ------------------------------------------


def test_sync_applies_a_hand_edited_extraction_as_a_rebuild_does(folder):
    book = _session(folder)
    path = folder / ".journal" / "extractions" / "0003-000001.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["state_changes"][0]["reason"] = "作者订正：瀑布边首次引气"
    data["relationships_new"] = [{"from": "jianlao", "to": "linfeng", "type": "传功", "description": "瀑布边传诀"}]
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    # a curator recorded a change at chapter 3 after the ingestion: the re-ingested rows stay before it,
    # as a replay orders them (the replace path alone would put them after)
    ingested = StateChange.objects.filter(book=book, chapter=3, source="extraction").order_by("seq").first()
    confirmed = state_change_curate(entity=ingested.entity, number=3, field="心境", new="警觉")
    assert confirmed.seq > 1

    report = book_sync(book=book)
    assert report["ok"], report["errors"]
    assert report["journal"] == {"extraction.edited": 1}
    assert StateChange.objects.get(pk=confirmed.pk).seq == confirmed.seq
    assert StateChange.objects.get(book=book, chapter=3, field="skills").reason == "作者订正：瀑布边首次引气"
    synced = book_dump(book=_book())
    assert book_sync(book=book)["journal"] == {}  # recorded: not applied twice
    assert _from_scratch(folder) == synced


def test_a_broken_hand_edit_is_named_and_changes_nothing_a_refused_one_applies_as_logged(folder):
    book = _session(folder)
    before = book_dump(book=book)
    path = folder / ".journal" / "extractions" / "0003-000001.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"state_changes": [', '"state_changes": [,'), encoding="utf-8")
    line = next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "[," in t)
    with pytest.raises(InvalidInput) as err:
        book_sync(book=book)
    assert err.value.message == (
        f".journal/log.jsonl 第2行（seq 1，extraction.ingest）：.journal/extractions/0003-000001.json "
        f"第{line}行第21列：JSON 无效（Expecting value）"
    )
    assert book_dump(book=_book()) == before
    # valid JSON the ingestion refuses: named, and the event applied as its log line recorded it (as a
    # rebuild into an empty database applies it: tests/bookfiles/test_live_drifts.py)
    bad = json.loads(text)
    bad["state_changes"][0]["entity_id"] = "nobody"
    path.write_text(json.dumps(bad, ensure_ascii=False, indent=2), encoding="utf-8")
    report = book_sync(book=book)
    assert report["ok"], report["errors"]
    assert [w["message"] for w in report["warnings"] if w["code"] == "journal_edit_refused"] == [
        ".journal/extractions/0003-000001.json 修改后无法应用（state_changes[0].entity_id: 未知实体 'nobody'），"
        "已按 .journal/log.jsonl 第2行（seq 1，extraction.ingest） 记录的原内容应用；"
        "文件中的修改保留，改正后再 sync 即按修改后的内容应用"
    ]
    assert book_dump(book=_book()) == before


def test_a_later_decision_on_an_item_the_edit_removed_is_a_warning(folder):
    book = _session(folder)
    path = folder / ".journal" / "extractions" / "0006-000006.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["entities_new"] = [e for e in data["entities_new"] if e["name"] != "灰衣老者"]
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    report = book_sync(book=book)
    assert report["journal"] == {"extraction.edited": 1}
    assert [(w["code"], w["line"]) for w in report["warnings"] if w["code"].startswith("journal_")] == [
        ("journal_orphaned", 8)
    ]
    # the superseded first ingestion of chapter 6, edited: said, and left to a rebuild
    old = folder / ".journal" / "extractions" / "0006-000002.json"
    old.write_text(old.read_text(encoding="utf-8").replace("半张鬼脸", "半张青脸"), encoding="utf-8")
    report = book_sync(book=book)
    assert report["journal"] == {}
    assert [w["code"] for w in report["warnings"] if w["code"].startswith("journal_")] == ["journal_superseded"]


# --- the retried crash: healed before the next write --------------------------------------------


def test_a_write_after_a_crashed_one_applies_the_crashed_event_first(folder):
    assert book_rebuild(root=folder)["ok"]
    book = _book()

    class Crash(Exception):
        pass

    first = _payload(3)
    with pytest.raises(Crash), transaction.atomic():  # the agent's first attempt dies before its commit
        extraction_ingest(book=book, number=3, payload=first)
        raise Crash
    assert not JournalApplied.objects.filter(book=book).exists()
    retried = json.loads(json.dumps(first))
    retried["state_changes"][0]["reason"] = "重试时订正"
    extraction_ingest(book=book, number=3, payload=retried)  # retried before any sync
    assert sorted(JournalApplied.objects.filter(book=book).values_list("seq", flat=True)) == [1, 2]
    # the retry is the newer event and its rows are the ones standing, as a replay gives them
    assert StateChange.objects.get(book=book, chapter=3, field="skills").reason == "重试时订正"
    assert book_sync(book=book)["journal"] == {}
    live = book_dump(book=_book())
    assert _from_scratch(folder) == live
    assert StateChange.objects.get(book=_book(), chapter=3, field="skills").reason == "重试时订正"


def test_a_crashed_decision_is_healed_before_the_next_decision(folder):
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    extraction_ingest(book=book, number=6, payload=_payload(6))
    held = PendingItem.objects.get(book=book, kind="uncertain", status="pending")
    from entities.services.pending import pending_item_reject

    with pytest.raises(RuntimeError), transaction.atomic():
        pending_item_reject(item=held, note="看不出是谁")
        raise RuntimeError("killed")
    assert PendingItem.objects.get(pk=held.pk).status == "pending"
    # the next write of the book (a fact) first applies the crashed rejection
    from memory.services import fact_observe

    fact_observe(book=book, category="open_loops", subject="断剑", field="来历", value="未明", number=6)
    assert PendingItem.objects.get(pk=held.pk).status == "rejected"
    assert [e["op"] for e in journal_events(root=folder)] == [
        "extraction.ingest",
        "pending.reject",
        "memory.fact.observe",
    ]
    assert Fact.objects.filter(book=book, subject="断剑").count() == 1


# --- migrate_state: what it ingests beyond the files it writes ---------------------------------


def test_a_migrated_old_project_comes_back_from_its_folder(tmp_path):
    from tests.entities.test_migrate_old_project import _migrate, _project

    root = _project(tmp_path / "doupo")
    _migrate(root)  # the dry run journals nothing
    assert journal_events(root=root) == []
    _migrate(root, "--commit")
    # the whole project in one command (issue 31): state.json, then the memory scratchpad
    assert [e["op"] for e in journal_events(root=root)] == ["legacy.state.import", "memory.import"]
    assert book_rebuild(root=root)["ok"]
    book = Book.objects.get(slug="doupo")
    before = book_dump(book=book)
    assert Entity.objects.get(book=book, entity_id="xiaoyan").source == "migration"
    assert _migrate(root, "--commit")["changed"] is False  # a second migration changes nothing: no event
    assert len(journal_events(root=root)) == 2

    Book.objects.filter(slug="doupo").delete()
    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    assert report["journal"] == {"legacy.state.import": 1, "memory.import": 1}
    assert book_dump(book=Book.objects.get(slug="doupo")) == before


def test_admin_adds_and_edits_go_through_the_journaled_services(folder, curator):
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    extraction_ingest(book=book, number=3, payload=_payload(3))
    lin = Entity.objects.get(book=book, entity_id="linfeng")
    # a new entity (its id generated), then a relationship with one event
    response = curator.post(
        "/admin/entities/entity/add/",
        {"book": book.pk, "entity_id": "", "type": "角色", "canonical_name": "云游道人", "tier": "次要",
         "description": "", "base_state": "{}", **_inline_management()},
    )  # fmt: skip
    assert response.status_code == 302
    hermit = Entity.objects.get(book=book, canonical_name="云游道人")
    assert (hermit.entity_id, hermit.source) == ("yunyoudaoren", "admin")
    events = {"events-TOTAL_FORMS": "1", "events-INITIAL_FORMS": "0", "events-0-chapter": "5",
              "events-0-description": "指点剑意"}  # fmt: skip
    response = curator.post(
        "/admin/entities/relationship/add/",
        {"book": book.pk, "from_entity": hermit.pk, "to_entity": lin.pk, "type": "指点", **events},
    )
    assert response.status_code == 302
    rel = Relationship.objects.get(book=book, from_entity=hermit)
    assert (rel.type, rel.description, rel.chapter) == ("指点", "指点剑意", 5)
    # the ingested state change, edited
    change = StateChange.objects.get(book=book, chapter=3, field="skills")
    response = curator.post(
        f"/admin/entities/statechange/{change.pk}/change/",
        {"chapter": 3, "field": "skills", "op": change.op, "old": "null",
         "new": json.dumps(change.new, ensure_ascii=False), "reason": "人工订正"},
    )  # fmt: skip
    assert response.status_code == 302
    assert StateChange.objects.get(pk=change.pk).reason == "人工订正"
    ops = [e["op"] for e in journal_events(root=folder)]
    assert ops == ["extraction.ingest", "entity.create", "relationship.save", "state_change.edit"]
    assert journal_events(root=folder)[2]["events"] == [{"chapter": 5, "description": "指点剑意", "source": "curation"}]
    before = book_dump(book=book)
    assert _from_scratch(folder) == before


def test_an_extraction_applied_before_stamps_were_recorded_is_stamped_then_followed(folder):
    assert book_rebuild(root=folder)["ok"]
    book = _book()
    extraction_ingest(book=book, number=3, payload=_payload(3))
    JournalApplied.objects.filter(book=book).update(attachment_hash="", attachment_size=None, attachment_mtime_ns=None)
    assert book_sync(book=book)["journal"] == {}  # taken as it is
    assert JournalApplied.objects.get(book=book, seq=1).attachment_hash != ""
    path = folder / ".journal" / "extractions" / "0003-000001.json"
    path.write_text(path.read_text(encoding="utf-8").replace("第一次引气入体", "首次引气入体"), encoding="utf-8")
    assert book_sync(book=book)["journal"] == {"extraction.edited": 1}
    assert StateChange.objects.get(book=book, chapter=3, field="skills").reason.endswith("首次引气入体")
