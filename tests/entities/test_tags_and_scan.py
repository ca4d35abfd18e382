import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.models import Chapter
from entities.mentions import mentions_index
from entities.models import AmbiguousMention, Appearance, Entity, StateChange, TagApplication
from entities.selectors import alias_resolve, entity_appearances, entity_state_as_of
from entities.services.writes import alias_add, entity_appearance_refresh
from kernel.exceptions import Ambiguous
from tests.factories import book_row_make, entity_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    book = book_row_make(chapters=0)
    lin = entity_make(
        book, "linfeng", "林风", aliases=["小风"], base_state={"realm": "炼气三层", "possessions": ["断剑"]}
    )
    alias_add(entity=lin, alias="林宗主", valid_from=80, note="接任宗主后")
    entity_make(book, "loc_qinglanzong", "青岚宗", type="地点")
    entity_make(book, "faction_qinglanzong", "青岚宗", type="势力")
    entity_make(book, "songzongzhu", "宋宗主", aliases=["宗主"])
    entity_make(book, "zhangzongzhu", "张宗主", aliases=["宗主"])
    bodies = {
        1: "林风走进青岚宗。小风！宗主喊道。林风应了。",
        2: "林宗主？不，那时他还不是。",
        80: "林宗主升座，小风已成往事。",
    }
    for n, body in bodies.items():
        Chapter.objects.create(book=book, number=n, title=f"第{n}章", body=body)
    return book


def test_scan_counts_offsets_windows_and_ambiguity(book):
    mentions_index(book=book, numbers=None, removed=[])
    lin = Entity.objects.get(entity_id="linfeng")
    row = Appearance.objects.get(entity=lin, chapter=1)
    assert (row.count, row.first_offset, row.aliases) == (3, 0, {"林风": 2, "小风": 1})
    # 林宗主 is only his name from chapter 80 on: chapter 2 is not an appearance of 林风.
    assert list(Appearance.objects.filter(entity=lin).values_list("chapter", "count")) == [(1, 3), (80, 2)]
    assert (lin.__class__.objects.get(pk=lin.pk).first_appearance, Entity.objects.get(pk=lin.pk).last_appearance) == (
        1,
        80,
    )
    assert list(AmbiguousMention.objects.values_list("chapter", "alias", "count", "first_offset", "candidates")) == [
        (1, "宗主", 1, 11, ["songzongzhu", "zhangzongzhu"]),
        (1, "青岚宗", 1, 4, ["faction_qinglanzong", "loc_qinglanzong"]),
    ]
    with pytest.raises(Ambiguous) as exc:
        alias_resolve(book=book, alias="宗主")
    assert exc.value.message == "别名歧义: '宗主' 命中 2 个实体，请改用 id 或补充 type 属性"
    assert [c["id"] for c in exc.value.extra["candidates"]] == ["songzongzhu", "zhangzongzhu"]
    assert alias_resolve(book=book, alias="青岚宗", type="势力").entity_id == "faction_qinglanzong"
    assert entity_appearances(book=book, ref="小风")["chapters"][1] == {
        "chapter": 80,
        "count": 2,
        "first_offset": 0,
        "aliases": {"林宗主": 1, "小风": 1},
        "sources": ["scan"],
    }


def test_rescan_of_one_chapter_sees_a_new_alias(book):
    mentions_index(book=book, numbers=None, removed=[])
    Chapter.objects.filter(book=book, number=2).update(body="阿风来了。")
    alias_add(entity=Entity.objects.get(entity_id="linfeng"), alias="阿风")
    mentions_index(book=book, numbers=[2], removed=[80])
    assert list(
        Appearance.objects.filter(entity__entity_id="linfeng").order_by("chapter").values_list("chapter", "count")
    ) == [(1, 3), (2, 1)]
    assert Entity.objects.get(entity_id="linfeng").last_appearance == 2


def test_manual_tags_are_applied_at_finalize_and_replaced_on_refinalize(book):
    Chapter.objects.filter(book=book, number=2).update(
        entity_tags=[
            {"line": 3, "text": '<entity type="物品" name="玉佩" aliases="青玉佩,玉坠"/>'},
            {"line": 4, "text": '<entity-alias ref="小风" alias="风师弟" note="同门称呼"/>'},
            {
                "line": 5,
                "text": '<entity-update id="linfeng" reason="突破">\n<set field="realm" value="筑基"/>\n'
                '<add field="possessions" value="玉佩"/><inc field="hp" value="-5"/></entity-update>',
            },
            {"line": 9, "text": '<entity-update ref="宗主"><set field="mood" value="怒"/></entity-update>'},
        ]
    )
    mentions_index(book=book, numbers=[2], removed=[])
    lin = Entity.objects.get(entity_id="linfeng")
    assert entity_state_as_of(entity=lin, number=2) == {"realm": "筑基", "possessions": ["断剑", "玉佩"], "hp": -5}
    assert Entity.objects.get(entity_id="item_yupei").aliases.count() == 2
    assert alias_resolve(book=book, alias="风师弟").entity_id == "linfeng"
    application = TagApplication.objects.get(book=book, chapter=2)
    assert application.issues == [
        {
            "line": 9,
            "text": '<entity-update ref="宗主"><set field="mood" value="怒"/></entity-update>',
            "message": "别名歧义: '宗主' 命中 2 个实体，请改用 id 或补充 type 属性",
            "partial": False,
        }
    ]
    # Re-finalizing the chapter with one tag left replaces what the tags wrote before.
    Chapter.objects.filter(book=book, number=2).update(
        entity_tags=[{"line": 3, "text": '<entity-update id="linfeng"><inc field="hp" value="10"/></entity-update>'}]
    )
    mentions_index(book=book, numbers=[2], removed=[])
    assert entity_state_as_of(entity=lin) == {"realm": "炼气三层", "possessions": ["断剑"], "hp": 10}
    assert StateChange.objects.filter(entity=lin, source="tag").count() == 1


def test_alias_window_applies_to_resolution(book):
    from kernel.exceptions import NotFound

    with pytest.raises(NotFound):
        alias_resolve(book=book, alias="林宗主", number=79)
    assert alias_resolve(book=book, alias="林宗主", number=80).entity_id == "linfeng"
    assert alias_resolve(book=book, alias="林宗主").entity_id == "linfeng"  # no chapter: any window


def test_pinyin_ids_with_type_prefix_and_collision_suffix(book):
    from entities.services.writes import entity_create

    assert entity_create(book=book, name="青岚宗", type="势力").entity_id == "faction_qinglanzong_1"
    assert entity_create(book=book, name="青岚宗", type="势力").entity_id == "faction_qinglanzong_2"
    assert entity_create(book=book, name="青岚十三式", type="招式").entity_id == "skill_qinglanshisanshi"
    assert entity_create(book=book, name="断剑 青岚", type="物品").entity_id == "item_duanjianqinglan"
    assert entity_create(book=book, name="林风", type="角色").entity_id == "linfeng_1"


def test_ingested_new_entity_is_scanned_at_once_and_rescan_command_catches_up(book):
    import io
    import json

    from django.core.management import call_command

    from entities.services.ingest import extraction_ingest

    Chapter.objects.filter(book=book, number=1).update(body="赵元拦住林风。赵师兄笑了。")
    Chapter.objects.filter(book=book, number=2).update(body="老赵又来了。")
    extraction_ingest(
        book=book,
        number=1,
        payload={"entities_new": [{"suggested_id": "zhaoyuan", "name": "赵元", "type": "角色", "aliases": ["赵师兄"]}]},
    )
    zhao = Entity.objects.get(entity_id="zhaoyuan")
    assert list(Appearance.objects.filter(entity=zhao, source="scan").values_list("chapter", "count")) == [(1, 2)]
    alias_add(entity=zhao, alias="老赵")
    out = io.StringIO()
    call_command("rescan_mentions", "qinglan", "--from", "2", "--to", "2", stdout=out)
    assert json.loads(out.getvalue())["chapters"] == 1
    assert list(Appearance.objects.filter(entity=zhao, source="scan").values_list("chapter", "count")) == [
        (1, 2),
        (2, 1),
    ]
    assert (Entity.objects.get(pk=zhao.pk).first_appearance, Entity.objects.get(pk=zhao.pk).last_appearance) == (1, 2)


SEED_TAGS = (
    '<entity type="角色" id="xiaoyan" name="萧炎" desc="萧家三少爷，斗之力三段" tier="核心">'
    "<alias>废物</alias><alias>炎儿</alias></entity>\n"
    '<entity-alias ref="萧炎" alias="岩枭" context="黑角域化名"/>\n'
    '<entity-update ref="萧炎"><set key="realm" value="斗者" reason="突破"/><add key="items" value="玄重尺"/>'
    '<inc key="spirit_stones" delta="1"/><unset key="injury"/><remove key="items" value="玄重尺"/></entity-update>\n'
)


def test_the_seeds_tag_syntax_applies_verbatim(tmp_path):
    import io

    from django.core.management import call_command

    from bookfiles.rebuilder import book_rebuild
    from tests.factories import book_folder_make, book_write

    root = book_folder_make(tmp_path / "mini")
    book_rebuild(root=root)
    book_write(root, "定稿/正文/第二卷/第0004章.md", f"---\ntitle: 斗者\n---\n萧炎睁眼。\n{SEED_TAGS}岩枭走了。\n")
    out = io.StringIO()
    call_command("finalize", "mini", "4", stdout=out)
    assert out.getvalue().splitlines()[0] == "定稿第4章《青岚剑录》：成功"
    xiaoyan = Entity.objects.get(book__slug="mini", entity_id="xiaoyan")
    assert (xiaoyan.canonical_name, xiaoyan.tier, xiaoyan.description) == ("萧炎", "核心", "萧家三少爷，斗之力三段")
    assert dict(xiaoyan.aliases.values_list("alias", "note")) == {"岩枭": "黑角域化名", "炎儿": "", "废物": ""}
    changes = list(StateChange.objects.filter(entity=xiaoyan).values_list("field", "op", "new", "reason"))
    assert changes == [
        ("realm", "set", "斗者", "突破"),
        ("items", "add", "玄重尺", ""),
        ("spirit_stones", "inc", 1, ""),
        ("injury", "unset", None, ""),
        ("items", "remove", "玄重尺", ""),
    ]
    assert entity_state_as_of(entity=xiaoyan, number=4) == {"realm": "斗者", "items": [], "spirit_stones": 1}
    assert TagApplication.objects.get(book__slug="mini", chapter=4).issues == []
    assert Chapter.objects.get(book__slug="mini", number=4).body == "萧炎睁眼。\n岩枭走了。\n"


def test_skipped_and_partial_tags_are_in_the_finalize_sync_and_rebuild_reports(tmp_path):
    import io

    from django.core.management import call_command

    from tests.factories import book_folder_make, book_write

    bad = (
        '<entity-update ref="林风"><set key="realm" value="筑基"/><set value="x"/><inc key="hp"/></entity-update>\n'
        '<entity-alias ref="无此人" alias="某甲"/>\n'
        '<entity type="角色" name="赵元">外门弟子\n'
    )
    root = book_folder_make(tmp_path / "mini")
    book_write(root, "定稿/正文/第二卷/第0004章.md", f"---\ntitle: 问剑\n---\n林风问剑。\n{bad}完。\n")
    out = io.StringIO()
    call_command("rebuild", str(root), stdout=out)
    text = out.getvalue()
    assert text.splitlines()[0] == "重建《青岚剑录》：成功（4 个实体标签未完全应用，见下）"
    path = "定稿/正文/第二卷/第0004章.md"
    assert "实体标签问题 4 个（跳过 2，部分应用 2）：" in text
    assert f"  [entity_tag_partial] {path}:5  第4章实体标签部分应用：<set> 缺少 key 属性（或 field）" in text
    assert f'  [entity_tag_partial] {path}:5  第4章实体标签部分应用：<inc key="hp"> 缺少 delta 属性（或 value）' in text
    assert f"  [entity_tag_skipped] {path}:6  第4章实体标签已跳过：别名 '无此人' 没有对应的实体" in text
    assert (
        f"  [entity_tag_skipped] {path}:7  第4章实体标签已跳过：<entity> 没有闭合：缺少 </entity>"
        '（或写成自闭合的 <entity …/>）  <entity type="角色" name="赵元">' in text
    )
    assert StateChange.objects.filter(entity__entity_id="linfeng", field="realm", chapter=4).exists()
    assert not Entity.objects.filter(book__slug="mini", canonical_name="赵元").exists()
    # the unclosed head is stripped alone; it never swallows the prose after it
    assert Chapter.objects.get(book__slug="mini", number=4).body == "林风问剑。\n外门弟子\n完。\n"

    book_write(root, "定稿/正文/第二卷/第0004章.md", f"---\ntitle: 问剑\n---\n林风问剑。\n{bad.splitlines()[1]}\n")
    for command, args, head in (
        ("finalize", ["mini", "4"], "定稿第4章《青岚剑录》：成功（1 个实体标签未完全应用，见下）"),
        ("sync", ["mini"], "同步《青岚剑录》：成功（1 个实体标签未完全应用，见下）"),
    ):
        out = io.StringIO()
        book_write(root, "定稿/正文/第二卷/第0004章.md", f"---\ntitle: 问剑{command}\n---\n{bad.splitlines()[1]}\n")
        call_command(command, *args, stdout=out)
        assert out.getvalue().splitlines()[0] == head, command
        assert "[entity_tag_skipped] 定稿/正文/第二卷/第0004章.md:4" in out.getvalue()


def test_the_spans_of_many_entities_are_written_in_one_statement(book):
    """issue 29: a rebuild moves every entity's first / last appearance; one executemany, not an UPDATE each."""
    Chapter.objects.create(book=book, number=3, title="第3章", body="宋宗主与张宗主对坐。")
    mentions_index(book=book, numbers=None, removed=[])
    Entity.objects.filter(book=book).update(first_appearance=None, last_appearance=None)
    with CaptureQueriesContext(connection) as queries:
        entity_appearance_refresh(entity_pks=Entity.objects.filter(book=book).values_list("pk", flat=True))
    updates = [q["sql"] for q in queries if "UPDATE" in q["sql"]]
    assert len(updates) == 1 and updates[0].startswith("3 times: UPDATE")  # Django logs an executemany once
    spans = {
        e: (f, la)
        for e, f, la in Entity.objects.filter(book=book).values_list("entity_id", "first_appearance", "last_appearance")
    }
    assert spans == {
        "linfeng": (1, 80),
        "songzongzhu": (3, 3),
        "zhangzongzhu": (3, 3),
        "loc_qinglanzong": (None, None),  # 青岚宗 names two entities: never attributed
        "faction_qinglanzong": (None, None),
    }
