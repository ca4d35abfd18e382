"""A model-based test of every write door (issue 24): a hypothesis ``RuleBasedStateMachine`` whose
rules are the writes a team makes to one book — finalize, hand edits then ``sync``, ingestion at every
confidence band, decisions on held items, a curator's admin writes, memory facts, Story System
settings, continuity waivers, a writer killed after its log line — and whose invariants, after every
step, are that the live database equals a rebuild of the same folder into an empty one (every table,
and ``dump_book``) and that a sync with nothing changed changes nothing.

The rules call the services the doors call (REST, MCP, the CLI and the admin are each ~10 lines over
the same service; tests/storysystem, tests/entities and tests/agents hold the door-by-door tests).
A writer "killed after its log line" is the same state on disk as a kill -9 between the append and
the commit (the log line is written, the transaction is not): the rule writes inside a transaction
that it then abandons. In the long run (a file database a child can open: ``child_db``), a real
writer is also SIGKILLed in a child process after a random write statement of its transaction, its
commit's after-commit hooks included (``killed_child_then_healed``);
tests/hardening/test_live_killed_writer.py does the same with a fixed seed under pytest.

Used by tests/bookfiles/test_live_equals_rebuild.py (a fixed budget) and bench/bench_live_rebuild.py
(the long run). Needs a database where after-commit hooks run (``transaction=True`` under pytest)."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from django.db import connection, transaction
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from bench.bench_faults import child_kill_at_pause
from bookfiles.rebuilder import book_dump, book_rebuild, book_sync, chapter_finalize
from continuity.services import waiver_add
from core.models import Book
from entities.discovery.services import book_discover, discovery_merge, discovery_split
from entities.models import Alias, Entity, PendingItem, StateChange
from entities.services.curation import entity_add, relationship_save, state_change_edit
from entities.services.ingest import extraction_ingest, extraction_parse
from entities.services.marks import aliases_generic_set, entity_merge
from entities.services.pending import pending_item_confirm, pending_item_reject
from entities.services.writes import entities_archive, state_change_curate
from kernel.exceptions import DomainError
from memory.models import Fact
from memory.services import fact_close, fact_decide, fact_observe, fact_revise
from storysystem.services import story_setting_build
from tests.bookfiles.live_state import book_tables, live_and_rebuild, tables_diff
from tests.conftest import DEMO_BOOK_SOURCE
from webnovel.demo import DEMO_EXTRACTIONS

SLUG = "demo-book"
BANDS = (0.95, 0.65, 0.3)  # adopted, adopted with a warning, held
NAMES = ("宗门", "老者", "剑客", "少年", "鬼面", "白鹭")
FIELDS = ("mood", "faction", "location")
VALUES = ("决意", "青岚宗", "幽冥殿", "剑冢", "雾海")
TYPES = ("同门", "师徒", "敌对")
LINES = ("林风与沈墨在宗门外相遇。", "剑老低声说起雾海。", "苏晚晴握紧了青玉佩。")


class Killed(Exception):
    """The writer died after its log line, before its commit."""


def _banded(payload: dict, band: float) -> dict:
    out = copy.deepcopy(payload)

    def walk(value):
        if isinstance(value, dict):
            if "confidence" in value:
                value["confidence"] = band
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(out)
    return out


def _pick(items: list, index: int):
    return items[index % len(items)] if items else None


class LiveEqualsRebuild(RuleBasedStateMachine):
    """Every write door against one copy of the demo book. ``record`` (the long run): a divergence is
    appended there, with the steps that led to it, and the sequence goes on, instead of failing."""

    record: list[dict] | None = None
    counts = {"sequences": 0, "steps": 0}
    # The long run (SQLite): the seed book is built once per process, then each sequence starts from a
    # copy of that database (sqlite3's backup) and of the folder as the build left it, in the same
    # place; the same state as a fresh copy and rebuild, ~10 s cheaper.
    snapshot = False
    # The long run: the database URL a child process opens (a file database), for the writer killed by
    # SIGKILL at a random write statement of its transaction (``killed_child_then_healed``)
    child_db: str | None = None
    _seed: tuple[Path, Path, sqlite3.Connection] | None = None

    def __init__(self) -> None:
        super().__init__()
        cls = type(self)
        seeded = cls.snapshot and cls._seed is not None and connection.vendor == "sqlite"
        if seeded:
            self.tmp, template, db = cls._seed
            self.root = self.tmp / SLUG
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.copytree(template, self.root)
            connection.ensure_connection()
            db.backup(connection.connection)
        else:
            self.tmp = Path(tempfile.mkdtemp(prefix="wn-live-"))
            self.root = Path(
                shutil.copytree(DEMO_BOOK_SOURCE, self.tmp / SLUG, ignore=shutil.ignore_patterns(".journal"))
            )
            Book.objects.filter(slug=SLUG).delete()
            report = book_rebuild(root=self.root)
            assert report["ok"], report["errors"]
            if cls.snapshot and connection.vendor == "sqlite":
                template = Path(shutil.copytree(self.root, self.tmp / "seed"))
                db = sqlite3.connect(":memory:", check_same_thread=False)
                connection.ensure_connection()
                connection.connection.backup(db)
                cls._seed = (self.tmp, template, db)
        self.steps = 0
        self.trail: list[str] = []
        self.next_chapter = 25
        LiveEqualsRebuild.counts["sequences"] += 1
        self.reported = len(self.record or [])
        self.divergences: list[str] = []

    def teardown(self) -> None:
        if self.record is not None:  # the long run's progress, readable even if it is stopped
            print(f"live-rebuild: {self.counts} divergences {len(self.record)}", file=sys.stderr, flush=True)
            for item in self.record[self.reported :]:
                print(f"  DIVERGED {item['invariant']}: {' → '.join(item['steps'])}", file=sys.stderr, flush=True)
                print("\n".join(f"    {line[:300]}" for line in item["diff"]), file=sys.stderr, flush=True)
        if type(self)._seed is not None and type(self)._seed[0] == self.tmp:
            return  # the next sequence restores the seed over this one
        Book.objects.filter(slug=SLUG).delete()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def book(self) -> Book:
        return Book.objects.get(slug=SLUG)

    def _try(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DomainError:
            return None  # a refused write changes nothing: the invariants still hold

    def _entities(self) -> list[Entity]:
        return list(Entity.objects.filter(book=self.book).order_by("entity_id"))

    def _sync(self) -> dict:
        report = book_sync(book=self.book)
        assert report["ok"], report.get("errors")
        failed = [w for w in report.get("warnings", []) if w.get("code") == "canon_report_failed"]
        assert not failed, failed
        return report

    # --- the author's files ----------------------------------------------------------------------

    @rule(tags=st.booleans(), line=st.sampled_from(LINES))
    def finalize_new_chapter(self, tags: bool, line: str) -> None:
        self._trace(locals())
        number = self.next_chapter
        self.next_chapter += 1
        body = f"---\ntitle: 新章{number}\n---\n{line}\n"
        if tags:
            body += '<entity type="势力" name="天云宗" id="tianyunzong"><alias>宗门</alias></entity>\n天云宗的人来到宗门。\n'
        path = self.root / "定稿" / "正文" / "第2卷" / f"第{number:04d}章.md"
        path.write_text(body, encoding="utf-8")
        report = chapter_finalize(book=self.book, number=number)
        assert report["ok"], report.get("errors")

    @rule(chapter=st.integers(1, 24), line=st.sampled_from(LINES))
    def edit_chapter_then_sync(self, chapter: int, line: str) -> None:
        self._trace(locals())
        path = next((self.root / "定稿" / "正文").rglob(f"第{chapter:04d}章.md"))
        path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
        self._sync()

    @rule(alias=st.sampled_from(NAMES))
    def edit_card_then_sync(self, alias: str) -> None:
        self._trace(locals())
        path = self.root / "设定" / "角色" / "剑老.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("aliases: [剑中残魂, 老头儿", f"aliases: [剑中残魂, 老头儿, {alias}", 1), "utf-8")
        self._sync()

    @rule(alias=st.sampled_from(NAMES))
    def edit_roster_then_sync(self, alias: str) -> None:
        self._trace(locals())
        path = self.root / "设定" / "名册.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("aliases: [无尽雾海", f"aliases: [无尽雾海, 雾{alias}", 1), "utf-8")
        self._sync()

    @rule(line=st.sampled_from(LINES))
    def edit_thread_then_sync(self, line: str) -> None:
        self._trace(locals())
        path = sorted((self.root / "线索").glob("*.md"))[0]
        path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
        self._sync()

    @rule(index=st.integers(0, 20), reason=st.sampled_from(LINES), refused=st.booleans())
    def edit_extraction_then_sync(self, index: int, reason: str, refused: bool) -> None:
        """An extraction file edited by hand: a field the ingestion knows (applied again), or an unknown
        one (refused: sync and rebuild apply the event as logged, and go on); the next valid edit of a
        refused file drops the unknown field."""
        self._trace(locals())
        path = _pick(sorted((self.root / ".journal" / "extractions").glob("*.json")), index)
        if path is None:
            return
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("summary", None)
        if refused:
            data["summary"] = reason  # not a field of an extraction
        for change in data.get("state_changes", [])[:1]:
            change["reason"] = reason
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        self._sync()

    # --- agents ------------------------------------------------------------------------------------

    @rule(chapter=st.sampled_from((3, 6, 8)), band=st.sampled_from(BANDS))
    def ingest(self, chapter: int, band: float) -> None:
        self._trace(locals())
        payload = extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())
        self._try(extraction_ingest, book=self.book, number=chapter, payload=_banded(payload, band))

    @rule(action=st.sampled_from(("confirm", "confirm_as", "reject")), index=st.integers(0, 20), who=st.integers(0, 40))
    def pending_decide(self, action: str, index: int, who: int) -> None:
        self._trace(locals())
        item = _pick(list(PendingItem.objects.filter(book=self.book, status="pending").order_by("pk")), index)
        if item is None:
            return
        if action == "reject":
            self._try(pending_item_reject, item=item, note="看不出")
        else:
            entity = _pick(self._entities(), who) if action == "confirm_as" else None
            self._try(pending_item_confirm, item=item, entity=entity)

    @rule(min_count=st.sampled_from((2, 4)))
    def discover(self, min_count: int) -> None:
        self._trace(locals())
        self._try(book_discover, book=self.book, min_count=min_count)

    @rule(a=st.integers(0, 20), b=st.integers(0, 20), split=st.booleans())
    def discovery_merge_or_split(self, a: int, b: int, split: bool) -> None:
        self._trace(locals())
        queue = list(
            PendingItem.objects.filter(book=self.book, kind="entity_discovered", status="pending").order_by("pk")
        )
        first, second = _pick(queue, a), _pick(queue, b)
        if first is None:
            return
        if split:
            aliases = [x["alias"] for x in first.payload.get("aliases", [])][:1]
            if aliases:
                self._try(discovery_split, item=first, aliases=aliases)
        elif first.pk != second.pk:
            self._try(discovery_merge, items=[first, second])

    # --- a curator's admin writes ------------------------------------------------------------------

    @rule(
        who=st.integers(0, 40), chapter=st.integers(1, 24), field=st.sampled_from(FIELDS), value=st.sampled_from(VALUES)
    )
    def state_change_new(self, who: int, chapter: int, field: str, value: str) -> None:
        self._trace(locals())
        entity = _pick(self._entities(), who)
        self._try(state_change_curate, entity=entity, number=chapter, field=field, new=value, reason="校对")

    @rule(index=st.integers(0, 40), chapter=st.integers(1, 24), value=st.sampled_from(VALUES))
    def state_change_change(self, index: int, chapter: int, value: str) -> None:
        self._trace(locals())
        change = _pick(list(StateChange.objects.filter(book=self.book).exclude(source="tag").order_by("pk")), index)
        if change is not None:
            self._try(
                state_change_edit, change=change, number=chapter, field=change.field, op="set", new=value, reason="改"
            )

    @rule(a=st.integers(0, 40), b=st.integers(0, 40), type=st.sampled_from(TYPES), chapter=st.integers(1, 24))
    def relationship_new(self, a: int, b: int, type: str, chapter: int) -> None:
        self._trace(locals())
        entities = self._entities()
        src, dst = _pick(entities, a), _pick(entities, b)
        if src is None or src.pk == dst.pk:
            return
        events = [{"chapter": chapter, "description": "", "source": "curation"}]
        self._try(relationship_save, book=self.book, key=None, from_entity=src, to_entity=dst, type=type, events=events)

    @rule(name=st.sampled_from(("灰衣人", "青衫客", "天云宗")), kind=st.sampled_from(("角色", "势力")))
    def entity_new(self, name: str, kind: str) -> None:
        self._trace(locals())
        self._try(entity_add, book=self.book, name=name, type=kind, description="新录")

    @rule(a=st.integers(0, 40), b=st.integers(0, 40))
    def merge(self, a: int, b: int) -> None:
        self._trace(locals())
        entities = self._entities()
        src, dst = _pick(entities, a), _pick(entities, b)
        if src is not None and src.pk != dst.pk:
            self._try(entity_merge, source=src, target=dst)

    @rule(who=st.integers(0, 40), archived=st.booleans())
    def archive(self, who: int, archived: bool) -> None:
        self._trace(locals())
        entity = _pick(self._entities(), who)
        self._try(entities_archive, entities=Entity.objects.filter(pk=entity.pk), archived=archived)

    @rule(index=st.integers(0, 80), generic=st.booleans())
    def generic_mark(self, index: int, generic: bool) -> None:
        self._trace(locals())
        alias = _pick(list(Alias.objects.filter(book=self.book).order_by("entity__entity_id", "alias")), index)
        if alias is not None:
            self._try(aliases_generic_set, aliases=Alias.objects.filter(pk=alias.pk), generic=generic)

    # --- memory, story system, continuity ----------------------------------------------------------

    @rule(subject=st.sampled_from(("断剑", "雾海图")), value=st.sampled_from(VALUES), chapter=st.integers(1, 24))
    def fact_add(self, subject: str, value: str, chapter: int) -> None:
        self._trace(locals())
        self._try(
            fact_observe,
            book=self.book,
            category="open_loops",
            subject=subject,
            field="来历",
            value=value,
            number=chapter,
        )

    @rule(index=st.integers(0, 10), action=st.sampled_from(("revise", "close", "decide")), chapter=st.integers(1, 24))
    def fact_change(self, index: int, action: str, chapter: int) -> None:
        self._trace(locals())
        fact = _pick(list(Fact.objects.filter(book=self.book, origin="manual", status="active").order_by("key")), index)
        if fact is None:
            return
        if action == "revise":
            self._try(fact_revise, fact=fact, value=f"改为{chapter}", number=chapter, reason="修订")
        elif action == "close":
            self._try(fact_close, fact=fact, number=chapter, reason="收尾")
        else:
            self._try(fact_decide, fact=fact, note="定")

    @rule(chapter=st.sampled_from((None, 5, 12)))
    def story_setting(self, chapter: int | None) -> None:
        self._trace(locals())
        self._try(story_setting_build, book=self.book, number=chapter, query="剑修 宗门 成长", persist=True)

    @rule(chapter=st.integers(1, 24), term=st.sampled_from(NAMES))
    def waiver(self, chapter: int, term: str) -> None:
        self._trace(locals())
        self._try(waiver_add, book=self.book, number=chapter, kind="near_name", term=term, note="作者确认")

    # --- a writer killed after its log line, healed by the next sync ------------------------------

    @rule(chapter=st.sampled_from((3, 6, 8)), band=st.sampled_from(BANDS), heal_by_sync=st.booleans())
    def killed_then_healed(self, chapter: int, band: float, heal_by_sync: bool) -> None:
        self._trace(locals())
        payload = extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())
        try:
            with transaction.atomic():
                extraction_ingest(book=self.book, number=chapter, payload=_banded(payload, band))
                raise Killed
        except (Killed, DomainError):
            pass
        if heal_by_sync:
            self._sync()
        else:  # the next writer heals first
            self._try(
                fact_observe,
                book=self.book,
                category="open_loops",
                subject="断剑",
                field="来历",
                value="残剑",
                number=3,
            )

    @precondition(lambda self: self.child_db is not None)
    @rule(
        op=st.sampled_from(("ingest", "fact", "confirm")),
        chapter=st.sampled_from((3, 6, 8)),
        band=st.sampled_from(BANDS),
        at=st.integers(1, 60),
        heal_by_sync=st.booleans(),
    )
    def killed_child_then_healed(self, op: str, chapter: int, band: float, at: int, heal_by_sync: bool) -> None:
        """A real writer (``bench/bench_faults.py child``: the CLI's ingest, a memory fact, a confirm)
        SIGKILLed after its ``at``-th write statement inside its transaction (or finished, when it makes
        fewer), then healed by the next sync or by the next writer."""
        self._trace(locals())
        args: tuple[str, ...] = (op, SLUG)
        if op == "ingest":
            payload = extraction_parse(raw=(DEMO_EXTRACTIONS / f"第{chapter:04d}章.json").read_bytes())
            path = self.tmp / f"killed-{self.steps}.json"
            path.write_text(json.dumps(_banded(payload, band), ensure_ascii=False), encoding="utf-8")
            args = (op, SLUG, str(chapter), str(path))
        elif op == "fact":
            args = (op, SLUG, str(chapter))
        elif not PendingItem.objects.filter(book=self.book, status="pending").exists():
            return
        pause = self.tmp / f"paused-{self.steps}"
        try:
            child_kill_at_pause(*args, db_url=self.child_db, pause_file=pause, pause_after=at)
            LiveEqualsRebuild.counts["killed"] = LiveEqualsRebuild.counts.get("killed", 0) + 1
        except RuntimeError:
            pass  # it made fewer writes: it finished (or refused), nothing to heal
        if heal_by_sync:
            self._sync()
        else:  # the next writer heals first
            self._try(
                fact_observe,
                book=self.book,
                category="open_loops",
                subject="断剑",
                field="来历",
                value="残剑",
                number=3,
            )

    # --- the invariants ----------------------------------------------------------------------------

    def _diverged(self, what: str, lines: list[str]) -> None:
        if not lines:
            return
        if self.record is None:
            raise AssertionError(f"{what}:\n" + "\n".join(lines))
        self.record.append({"invariant": what, "steps": list(self.trail), "diff": lines[:12]})

    def _trace(self, args: dict) -> None:
        name = sys._getframe(1).f_code.co_name
        self.trail.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items() if k != 'self')})")

    @invariant()
    def live_equals_rebuild_and_sync_changes_nothing(self) -> None:
        """On the live book: a sync with nothing changed changes nothing; then the live book equals a
        rebuild of its folder into an empty database (which then replaces it). Every table is read
        three times a step (before the sync, after it, after the rebuild)."""
        self.steps += 1
        LiveEqualsRebuild.counts["steps"] += 1
        before, dump = book_tables(book=self.book), book_dump(book=self.book)
        self._sync()
        after = book_tables(book=self.book)
        self._diverged("sync with nothing changed changed", tables_diff(before, after))
        tables, dump_diff = live_and_rebuild(slug=SLUG, root=self.root, before=after, dump_before=dump)
        self._diverged("live ≠ rebuild", tables + dump_diff)
