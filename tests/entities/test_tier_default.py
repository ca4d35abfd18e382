"""An entity whose file, tag or extraction names no tier is 装饰, as the seed says (it was 次要)."""

import pytest

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from entities.models import Entity
from entities.services.ingest import extraction_ingest
from entities.services.writes import entity_create
from tests.factories import book_folder_make, book_row_make

pytestmark = pytest.mark.django_db


def test_files_tags_extractions_and_services_default_to_decor(tmp_path):
    card = "---\nname: 路人甲\n---\n过客。\n"
    assert book_rebuild(root=book_folder_make(tmp_path / "mini", {"设定/角色/路人甲.md": card}))["ok"]
    book = Book.objects.get(slug="mini")
    tiers = dict(Entity.objects.filter(book=book).values_list("canonical_name", "tier"))
    assert tiers["断剑青岚"] == "装饰"  # a roster entry without tier
    assert tiers["路人甲"] == "装饰"  # a card without tier
    assert tiers["剑老"] == "重要"  # a card that says
    bare = book_row_make(slug="bare", chapters=1)
    extraction_ingest(book=bare, number=1, payload={"entities_new": [{"name": "赵元", "type": "角色"}]})
    assert Entity.objects.get(book=bare, canonical_name="赵元").tier == "装饰"
    assert entity_create(book=bare, name="黑衣人", type="角色").tier == "装饰"
    assert Entity._meta.get_field("tier").default == "装饰"
