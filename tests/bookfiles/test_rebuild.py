"""book_rebuild on the mini fixture book (tests/factories.py, book_folder_make): exact counts and values,
atomicity, determinism, curated data surviving, and the rebuild / dump_book commands."""

import json

import pytest
from django.core.management import CommandError, call_command

from bookfiles.rebuilder import book_dump, book_rebuild
from core.models import Book, Chapter, Document, Fingerprint, SourceFile, TimelineRow, Volume
from entities.models import Alias, Entity
from tests.factories import ROSTER, book_folder_make, book_write, chapter_text
from threads.models import Secret, Thread

pytestmark = pytest.mark.django_db

MINI_COUNTS = {
    "chapters": 3,
    "volumes": 2,
    "threads": 2,
    "secrets": 1,
    "entities": 7,
    "aliases": 7,
    "documents": 6,
    "sections": 10,
    "timeline_rows": 2,
    "fingerprints": 3,
    "words": 59,
}


@pytest.fixture
def mini(tmp_path):
    return book_folder_make(tmp_path / "mini")


def _dump() -> str:
    return book_dump(book=Book.objects.get(slug="mini"))


def test_rebuild_counts(mini):
    report = book_rebuild(root=mini)
    assert report["book"] == "mini"
    assert report["ok"] is True
    assert report["errors"] == []
    assert report["warnings"] == []
    assert report["counts"] == MINI_COUNTS


def test_rebuild_book_and_chapter_values(mini):
    book_rebuild(root=mini)
    book = Book.objects.get(slug="mini")
    assert (book.title, book.genre, book.root) == ("青岚剑录", "仙侠", str(mini.resolve()))
    assert book.thresholds == {"伏笔": 25, "悬念": 10, "感情线": 20, "secret_accumulation": 50, "weak_hook_streak": 3}
    assert (book.style_baseline_start, book.style_baseline_end) == (1, 2)
    assert book.build_report["counts"] == MINI_COUNTS
    assert book.built_at is not None
    assert list(Volume.objects.filter(book=book).values_list("number", "name", "start_chapter", "end_chapter")) == [
        (1, "青岚初鸣", 1, 2),
        (2, "雾海问剑", 3, 4),
    ]
    first = Chapter.objects.get(book=book, number=1)
    assert (first.volume, first.title, first.chapter_position, first.mood_position, first.key_chapter) == (
        1,
        "山门夜雨",
        "推进",
        "压抑",
        True,
    )
    assert first.body == "夜雨如注，林风拾起断剑。\n\n“你是谁？”林风问。\n剑中传出一声叹息……\n"
    assert first.entity_tags == [{"line": 18, "text": '<entity id="linfeng" />'}]
    assert (first.word_count, first.source_path) == (32, "定稿/正文/第1卷 青岚初鸣/第0001章.md")
    assert list(Chapter.objects.filter(book=book).values_list("number", "volume")) == [(1, 1), (2, 1), (3, 2)]
    assert Fingerprint.objects.get(book=book, start_chapter=3, end_chapter=3).features == {
        "chars": 14,
        "cjk_chars": 9,
        "sentences": 2,
        "paragraphs": 1,
        "dialogue_chars": 3,
        "exclamations": 0,
        "questions": 0,
        "ellipses": 0,
        "commas": 1,
        # 「雾海茫茫，「到了」 | 」剑老道」: the closing quote joins the next sentence, never its own
        "sentence_lengths": 2,
        "sentence_length_sum": 9,
        "sentence_length_sq": 6 * 6 + 3 * 3,
        "richness_windows": 0,  # 9 Chinese characters: no full window of 500
        "richness_types": 0,
        "phrase_ngrams": 1,  # 雾海茫茫 (到了, 剑老道 are shorter than a phrase)
        "phrase_repeats": 0,
        "phrases": {},
    }
    assert SourceFile.objects.filter(book=book).count() == 15
    chapter_file = SourceFile.objects.get(book=book, path="定稿/正文/第二卷/第0003章.md")
    assert (chapter_file.kind, chapter_file.size) == ("chapter", 112)


def test_rebuild_threads_secrets_documents_timeline(mini):
    book_rebuild(root=mini)
    book = Book.objects.get(slug="mini")
    thread = Thread.objects.get(book=book, thread_id="伏笔-001")
    assert (thread.type, thread.strength, thread.planned_end, thread.source_path) == (
        "伏笔",
        "高",
        40,
        "线索/伏笔-001 断剑之谜.md",
    )
    assert list(thread.history.values_list("order", "chapter", "text")) == [
        (0, 1, "林风雨夜拾得断剑，剑中有声。"),
        (1, 2, "老者自称“剑中残魂”。"),
    ]
    secret = Secret.objects.get(book=book, secret_id="信息差-001")
    assert secret.known_to == [{"name": "剑老", "since": 2}, {"name": "林风", "since": 20}]
    assert secret.registered_chapter == 2
    card = Document.objects.get(book=book, kind="character_card", key="林风")
    assert list(card.sections.values_list("heading", "body")) == [("外貌", "清瘦少年。"), ("性格", "沉静。")]
    outline = Document.objects.get(book=book, kind="volume_outline", key="1")
    assert outline.source_path == "大纲/卷纲/第1卷.md"
    assert list(TimelineRow.objects.filter(book=book).values_list("volume", "order", "chapter", "present")) == [
        (1, 0, 1, ["林风", "剑老"]),
        (1, 1, 2, ["林风", "剑老"]),
    ]


def test_rebuild_entities_ids_state_aliases(mini):
    book_rebuild(root=mini)
    book = Book.objects.get(slug="mini")
    assert sorted(Entity.objects.filter(book=book).values_list("entity_id", "type", "canonical_name")) == [
        ("faction_qinglanzong", "势力", "青岚宗"),
        ("item_duanjianqinglan", "物品", "断剑青岚"),
        ("jianlao", "角色", "剑老"),
        ("linfeng", "角色", "林风"),
        ("loc_qinglanzong", "地点", "青岚宗"),
        ("skill_qinglanshisanshi", "招式", "青岚十三式"),
        ("wangbo", "角色", "王伯"),
    ]
    linfeng = Entity.objects.get(book=book, entity_id="linfeng")
    assert (linfeng.tier, linfeng.is_protagonist, linfeng.source, linfeng.source_path) == (
        "核心",
        True,
        "file",
        "设定/角色/林风.md",
    )
    assert linfeng.base_state == {
        "status": "存活",
        "location": "青岚宗",
        "realm": "炼气三层",
        "possessions": ["断剑青岚"],
    }
    assert sorted(linfeng.aliases.values_list("alias", "valid_from", "valid_to", "note", "source")) == [
        ("小风", None, None, "", "file"),
        ("林宗主", 80, None, "接任宗主后", "file"),
    ]


def test_explicit_id_and_pinyin_collision(tmp_path):
    root = book_folder_make(
        tmp_path / "mini",
        {
            "设定/名册.yaml": ROSTER + "  - name: 林风\n  - name: 剑老\n    id: sword_elder\n",
            "设定/角色/剑老.md": "---\nname: 剑老\nid: jianlao_card\n---\n",
        },
    )
    book_rebuild(root=root)
    ids = dict(
        Entity.objects.filter(book__slug="mini", type="角色")
        .values_list("source_path", "entity_id")
        .order_by("entity_id")
    )
    names = sorted(Entity.objects.filter(book__slug="mini", type="角色").values_list("entity_id", "canonical_name"))
    assert names == [
        ("jianlao_card", "剑老"),
        ("linfeng", "林风"),
        ("linfeng_1", "林风"),
        ("sword_elder", "剑老"),
        ("wangbo", "王伯"),
    ]
    # file order: 名册.yaml sorts before 设定/角色/, so the roster's 林风 is linfeng and the card gets _1
    assert ids["设定/角色/林风.md"] in {"linfeng", "linfeng_1"}
    assert Entity.objects.get(book__slug="mini", entity_id="linfeng").source_path == "设定/名册.yaml"


def test_determinism_two_rebuilds_identical_dump(mini):
    book_rebuild(root=mini)
    first = _dump()
    book_rebuild(root=mini)
    assert _dump() == first
    data = json.loads(first)
    assert [c["number"] for c in data["chapters"]] == [1, 2, 3]
    assert "id" not in data["chapters"][0] and "built_at" not in data["book"]


def test_broken_file_aborts_and_keeps_previous_data(mini):
    book_rebuild(root=mini)
    before = _dump()
    book_write(mini, "线索/悬念-001.md", "---\ntitle: [坏\n---\n")
    book_write(mini, "定稿/正文/第0004章.md", chapter_text(title="新章"))
    report = book_rebuild(root=mini)
    assert report["ok"] is False
    assert [(e["code"], e["file"], e["line"]) for e in report["errors"]] == [("yaml_error", "线索/悬念-001.md", 3)]
    assert report["counts"]["chapters"] == 0
    assert _dump() == before
    assert not Chapter.objects.filter(book__slug="mini", number=4).exists()


def test_exception_in_indexer_rolls_back(mini, settings):
    book_rebuild(root=mini)
    before = _dump()
    book_write(mini, "定稿/正文/第0004章.md", chapter_text(title="新章"))
    settings.WEBNOVEL_CHAPTER_INDEXERS = ["tests.bookfiles.test_rebuild.indexer_failing"]
    with pytest.raises(RuntimeError, match="索引器故障"):
        book_rebuild(root=mini)
    assert _dump() == before


def indexer_failing(*, book, numbers, removed):
    raise RuntimeError("索引器故障")


CALLS: list = []


def indexer_recording(*, book, numbers, removed):
    CALLS.append((book.slug, numbers, removed, Chapter.objects.filter(book=book).count()))


def test_indexers_run_inside_transaction_with_removed_numbers(mini, settings):
    settings.WEBNOVEL_CHAPTER_INDEXERS = ["tests.bookfiles.test_rebuild.indexer_recording"]
    CALLS.clear()
    book_rebuild(root=mini)
    (mini / "定稿/正文/第二卷/第0003章.md").unlink()
    report = book_rebuild(root=mini)
    assert CALLS == [("mini", None, [], 3), ("mini", None, [3], 2)]
    assert report["indexers"] == ["tests.bookfiles.test_rebuild.indexer_recording"]


def test_warnings_are_reported_and_book_indexed(mini):
    book_write(mini, "线索/悬念-001.md", "---\nstrength: 高\n---\n")
    report = book_rebuild(root=mini)
    assert report["ok"] is True
    assert [(w["code"], w["file"], w["line"]) for w in report["warnings"]] == [
        ("missing_planned_end", "线索/悬念-001.md", 2)
    ]
    assert Thread.objects.get(book__slug="mini", thread_id="悬念-001").strength == "高"


def test_curated_entities_and_aliases_survive(mini):
    book_rebuild(root=mini)
    book = Book.objects.get(slug="mini")
    linfeng = Entity.objects.get(book=book, entity_id="linfeng")
    admin = Entity.objects.create(book=book, entity_id="yaoshou", type="角色", canonical_name="妖兽", source="admin")
    Alias.objects.create(book=book, entity=admin, alias="大妖", source="admin")
    Alias.objects.create(book=book, entity=linfeng, alias="风哥", source="admin")
    # the roster loses 王伯; the card's alias list changes
    book_write(mini, "设定/名册.yaml", ROSTER.replace("角色:\n  - 王伯\n", ""))
    book_write(mini, "设定/角色/林风.md", "---\nname: 林风\naliases: [阿风]\ntier: 核心\n---\n")
    report = book_rebuild(root=mini)
    assert report["counts"]["entities"] == 6
    assert Entity.objects.get(book=book, entity_id="linfeng").pk == linfeng.pk  # upserted, FKs stay valid
    assert sorted(Alias.objects.filter(entity=linfeng).values_list("alias", "source")) == [
        ("阿风", "file"),
        ("风哥", "admin"),
    ]
    assert Entity.objects.filter(book=book, entity_id="yaoshou", source="admin").exists()
    assert list(Alias.objects.filter(entity=admin).values_list("alias", flat=True)) == ["大妖"]
    assert not Entity.objects.filter(book=book, entity_id="wangbo").exists()


def test_generated_id_skips_curated_id(mini):
    book = Book.objects.create(slug="mini", root=str(mini))
    Entity.objects.create(book=book, entity_id="linfeng", type="角色", canonical_name="林风（人工）", source="admin")
    report = book_rebuild(root=mini)
    assert report["ok"] is True
    assert Entity.objects.get(book=book, entity_id="linfeng").source == "admin"
    assert Entity.objects.get(book=book, entity_id="linfeng_1").source_path == "设定/角色/林风.md"


def test_slug_defaults_to_folder_name(tmp_path):
    root = book_folder_make(tmp_path / "无名书", {"book.yaml": "title: 无名\n"})
    report = book_rebuild(root=root)
    assert report["book"] == "无名书"
    assert Book.objects.get(slug="无名书").title == "无名"
    assert Volume.objects.filter(book__slug="无名书").count() == 2  # from the volume folders


def test_rebuild_command_json_and_errors(mini, capsys):
    call_command("rebuild", str(mini), "--json")
    out = json.loads(capsys.readouterr().out)
    assert (out["ok"], out["counts"]["chapters"]) == (True, 3)
    call_command("rebuild", str(mini))
    assert "重建《青岚剑录》：成功" in capsys.readouterr().out  # the title, not the slug
    with pytest.raises(CommandError, match="书籍文件夹不存在"):
        call_command("rebuild", str(mini / "nope"))
    book_write(mini, "book.yaml", "slug: mini\nvolumes: [\n")
    with pytest.raises(CommandError, match="重建失败：1 个错误"):
        call_command("rebuild", str(mini))
    assert "[yaml_error] book.yaml:3" in capsys.readouterr().out


def test_dump_book_command(mini, tmp_path, capsys):
    book_rebuild(root=mini)
    target = tmp_path / "dump.json"
    call_command("dump_book", "mini", "--output", str(target))
    assert target.read_text(encoding="utf-8") == _dump()
    with pytest.raises(CommandError, match="书籍 'nope' 不存在"):
        call_command("dump_book", "nope")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("existing", [False, True], ids=["new-book", "existing-book"])
def test_concurrent_rebuilds_never_interleave(mini, existing):
    import threading

    from django.db import connection

    if existing:
        book_rebuild(root=mini)
    reports, failures = [], []

    def run():
        try:
            reports.append(book_rebuild(root=mini))
        except Exception as exc:  # noqa: BLE001 - the test asserts there were none
            failures.append(repr(exc))
        finally:
            connection.close()

    workers = [threading.Thread(target=run) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
    assert [r["counts"] for r in reports] == [MINI_COUNTS] * 3
    assert Book.objects.filter(slug="mini").count() == 1
    assert Chapter.objects.filter(book__slug="mini").count() == 3
    assert Alias.objects.filter(book__slug="mini").count() == 7
    first = _dump()
    book_rebuild(root=mini)
    assert _dump() == first


def test_explicit_id_of_curated_entity_is_skipped_with_warning(mini):
    book = Book.objects.create(slug="mini", root=str(mini))
    Entity.objects.create(book=book, entity_id="jianlao", type="角色", canonical_name="剑老（人工）", source="admin")
    book_write(mini, "设定/角色/剑老.md", "---\nname: 剑老\nid: jianlao\n---\n")
    report = book_rebuild(root=mini)
    assert report["ok"] is True
    assert [(w["code"], w["file"], w["line"]) for w in report["warnings"]] == [
        ("entity_id_taken", "设定/角色/剑老.md", 2)
    ]
    assert Entity.objects.get(book=book, entity_id="jianlao").canonical_name == "剑老（人工）"
    assert report["counts"]["entities"] == 6


def test_rebuild_command_accepts_folder_name_under_books_dir(mini, settings, capsys):
    settings.WEBNOVEL_BOOKS_DIR = mini.parent
    call_command("rebuild", "mini", "--json")
    assert json.loads(capsys.readouterr().out)["counts"]["chapters"] == 3


def test_entity_ids_from_pinyin():
    from entities.ids import entity_id_base, entity_ids_assign

    assert entity_id_base(name="林风", type="角色") == "linfeng"
    assert entity_id_base(name="重庆", type="地点") == "loc_chongqing"
    assert entity_id_base(name="A级丹药", type="物品") == "item_ajidanyao"
    assert entity_ids_assign(
        [("林风", "角色", ""), ("林风", "角色", ""), ("王伯", "角色", "linfeng_2"), ("女娲", "角色", "")]
    ) == ["linfeng", "linfeng_1", "linfeng_2", "nvwa"]
