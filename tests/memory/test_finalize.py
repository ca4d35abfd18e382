"""The real path: a book folder, rebuild, then a new chapter finalized with an <entity-update> tag."""

import pytest

from memory.models import Fact
from memory.orchestrator import build_memory_pack
from tests.factories import book_folder_make, book_write, chapter_text


@pytest.fixture
def mini(tmp_path, db, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    root = book_folder_make(tmp_path / "mini")
    with django_capture_on_commit_callbacks(execute=True):
        assert book_rebuild(root=root)["ok"]
    return root, Book.objects.get(slug="mini")


def test_finalizing_a_chapter_updates_the_memory(mini, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import chapter_finalize

    root, book = mini
    before = Fact.objects.get(book=book, subject="林风", field="realm", source_chapter=0)
    body = '林风闭关三日，一朝破境。\n<entity-update id="linfeng" reason="突破">\n  <set field="realm" value="筑基初期"/>\n</entity-update>\n'
    text = chapter_text(
        title="破境", summary="林风闭关破境。", story_time="青岚历三百二十年·夏", hook_type="悬念钩-中", body=body
    )
    book_write(root, "定稿/正文/第二卷/第0004章.md", text)
    with django_capture_on_commit_callbacks(execute=True):
        chapter_finalize(book=book, number=4)
    realm = Fact.objects.get(book=book, subject="林风", field="realm", source_chapter=4)
    before.refresh_from_db()
    assert (realm.value, realm.status, before.status, before.superseded_by_id) == (
        "筑基初期",
        "active",
        "outdated",
        realm.pk,
    )
    assert realm.evidence[0]["kind"] == "state_change" and realm.evidence[0]["source"] == "tag"
    hook = Fact.objects.get(book=book, subject="章末钩子", status="active")
    assert hook.value == "第4章以「悬念钩-中」收尾：林风闭关破境。"
    pack = build_memory_pack(book=book, number=5, budget_tokens=2000)
    assert "境界：筑基初期" in pack["text"]
