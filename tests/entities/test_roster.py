"""entities.roster: the roster's writer keeps agent and curator data across a rebuild.

The writer takes any object with the parsed entry's attributes (a Protocol), not the book-files
parser's dataclasses: these tests build plain namespaces."""

from types import SimpleNamespace

from entities.models import Alias, Entity
from entities.roster import RosterIssue, roster_removal_preview, roster_write
from tests.factories import book_row_make, entity_make


def entry(name, *, explicit_id="", aliases=(), path="设定/名册.yaml", line=1):
    return SimpleNamespace(
        type="角色",
        name=name,
        path=path,
        line=line,
        explicit_id=explicit_id,
        tier="主要",
        description="",
        base_state={},
        protagonist=False,
        aliases=[SimpleNamespace(alias=a, valid_from=None, valid_to=None, note="", generic=False) for a in aliases],
    )


def test_an_id_held_by_an_ingested_entity_is_reserved(db):
    book = book_row_make()
    entity_make(book, "linfeng", "林风", source="extraction")
    written = roster_write(book=book, entities=[entry("林风甲", explicit_id="linfeng", line=3), entry("林风")])
    assert written == (
        1,
        0,
        [
            RosterIssue(
                "entity_id_taken",
                "设定/名册.yaml",
                3,
                "实体 id linfeng 已被非文件来源（extraction）的实体占用，文件条目「林风甲」未导入",
            )
        ],
    )
    assert sorted(Entity.objects.filter(book=book).values_list("entity_id", "source")) == [
        ("linfeng", "extraction"),
        ("linfeng_1", "file"),
    ]


def test_a_curated_alias_wins_over_the_file_alias_of_the_same_name(db):
    book = book_row_make()
    roster_write(book=book, entities=[entry("苏晚晴", aliases=["晚晴"])])
    entity = Entity.objects.get(book=book, entity_id="suwanqing")
    Alias.objects.filter(entity=entity).update(source="admin", note="馆员确认")
    assert roster_write(book=book, entities=[entry("苏晚晴", aliases=["晚晴", "苏师妹"])]) == (1, 1, [])
    assert sorted(Alias.objects.filter(entity=entity).values_list("alias", "source", "note")) == [
        ("晚晴", "admin", "馆员确认"),
        ("苏师妹", "file", ""),
    ]


def test_an_entry_gone_is_deleted_unless_curated_rows_point_at_it_then_archived_and_revived(db):
    book = book_row_make()
    roster_write(book=book, entities=[entry("林风"), entry("沈墨"), entry("赵乾")])
    shenmo = Entity.objects.get(book=book, entity_id="shenmo")
    Alias.objects.create(book=book, entity=shenmo, alias="墨兄", source="admin")
    assert roster_removal_preview(book=book, names={"林风"}) == (["赵乾"], ["沈墨"])
    assert roster_write(book=book, entities=[entry("林风")]) == (1, 0, [])
    assert sorted(Entity.objects.filter(book=book).values_list("entity_id", "archived", "source_path")) == [
        ("linfeng", False, "设定/名册.yaml"),
        ("shenmo", True, ""),
    ]
    roster_write(book=book, entities=[entry("林风"), entry("沈墨")])
    assert Entity.objects.filter(book=book, entity_id="shenmo").values_list("archived", "source_path").get() == (
        False,
        "设定/名册.yaml",
    )
    assert list(Alias.objects.filter(entity=shenmo).values_list("alias", flat=True)) == ["墨兄"]
