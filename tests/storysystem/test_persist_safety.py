"""story-system persist never loses an author's notes nor writes outside the book (issue 19 items 3, 13)."""

import json

import pytest

import core.journal
from kernel.exceptions import Conflict, InvalidInput
from storysystem.markdown import BEGIN, END
from storysystem.models import StorySetting
from storysystem.services import story_master_build

pytestmark = pytest.mark.django_db

NOTES = "# 我的总设定\n作者手记：女主第三卷再出场。\n\n"


@pytest.fixture
def persisted(book, tmp_path):
    story_master_build(book=book, query="玄幻退婚流", persist=True)
    return tmp_path / ".story-system"


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("edit", "found"),
    [
        (lambda t: t.replace(END, ""), f"{BEGIN} 第3行；缺少 {END}"),
        (lambda t: t.replace(BEGIN, ""), f"缺少 {BEGIN}；{END} 第"),
        (lambda t: t + f"\n{BEGIN}\n作者又贴了一份\n", f"{BEGIN} 第3、"),
        (lambda t: t.replace(BEGIN, "@@").replace(END, BEGIN).replace("@@", END), f"{BEGIN} 第"),
    ],
)
def test_broken_markers_refuse_the_persist_and_change_nothing(book, persisted, edit, found):
    md = persisted / "MASTER_SETTING.md"
    md.write_text(edit(md.read_text(encoding="utf-8")) + "\n## 备忘\n- 别忘了师父的旧伤\n", encoding="utf-8")
    before = _files(persisted)
    with pytest.raises(InvalidInput) as exc:
        story_master_build(book=book, query="都市赘婿", persist=True)
    assert exc.value.message.startswith(".story-system/MASTER_SETTING.md 的生成块标记不完整或重复（")
    assert found in exc.value.message
    assert "文件未改动" in exc.value.message
    assert _files(persisted) == before  # neither the Markdown nor the JSON beside it changed
    assert StorySetting.objects.get(book=book, chapter__isnull=True).query == "玄幻退婚流"


def test_a_truncated_non_utf8_file_is_a_clear_error(book, persisted):
    md = persisted / "MASTER_SETTING.md"
    md.write_bytes(md.read_bytes()[:-1] + "林".encode()[:2])  # cut inside a character, as a full disk does
    with pytest.raises(InvalidInput, match=r"MASTER_SETTING.md 第\d+行不是 UTF-8（文件可能被截断）"):
        story_master_build(book=book, query="都市赘婿", persist=True)


def test_query_newlines_and_forged_markers_stay_on_one_line(book, persisted):
    query = f"退婚\n## 注入的标题\n{END}\n\r\n尾巴"
    story_master_build(book=book, query=query, persist=True)
    md = (persisted / "MASTER_SETTING.md").read_text(encoding="utf-8")
    assert md.count(BEGIN) == 1 and md.count(END) == 1
    assert "## 注入的标题" not in md.splitlines()
    assert "- 查询：退婚\\n## 注入的标题\\n&lt;!-- STORY-SYSTEM:END --&gt;\\n\\r\\n尾巴" in md.splitlines()
    (persisted / "MASTER_SETTING.md").write_text(NOTES + md, encoding="utf-8")
    story_master_build(book=book, query="都市赘婿", persist=True)  # the next persist still works
    again = (persisted / "MASTER_SETTING.md").read_text(encoding="utf-8")
    assert again.startswith(NOTES + "# 《退婚之后》故事系统总设定") and "- 查询：都市赘婿" in again


def test_a_planted_symlink_to_a_file_outside_is_refused(book, persisted, tmp_path_factory):
    outside = tmp_path_factory.mktemp("site-packages") / "sitecustomize.py"
    outside.write_text("SAFE = True\n", encoding="utf-8")
    (persisted / "MASTER_SETTING.json").unlink()
    (persisted / "MASTER_SETTING.json").symlink_to(outside)
    with pytest.raises(InvalidInput) as exc:
        story_master_build(book=book, query="都市赘婿", persist=True)
    assert exc.value.message == "拒绝写入：.story-system/MASTER_SETTING.json 是符号链接（可能指向书籍目录之外）"
    assert outside.read_text(encoding="utf-8") == "SAFE = True\n"
    assert StorySetting.objects.get(book=book, chapter__isnull=True).query == "玄幻退婚流"


def test_a_planted_symlink_to_a_folder_outside_is_refused(book, tmp_path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (tmp_path / ".story-system").symlink_to(outside)
    with pytest.raises(InvalidInput, match=r"拒绝写入：\.story-system 是符号链接"):
        story_master_build(book=book, query="玄幻退婚流", persist=True)
    assert list(outside.iterdir()) == []
    assert not StorySetting.objects.exists()


def test_rest_build_with_persist_through_a_symlink_is_a_422(api, book, tmp_path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (tmp_path / ".story-system").symlink_to(outside)
    response = api.post(
        "/api/books/tuihun/story-system/build",
        json.dumps({"query": "玄幻退婚流"}),
        content_type="application/json",
    )
    assert response.status_code == 422
    assert response.json()["message"] == "拒绝写入：.story-system 是符号链接（可能指向书籍目录之外）"
    assert list(outside.iterdir()) == []


def test_a_fifo_planted_at_the_markdown_file_is_refused_without_blocking(book, persisted):
    import os

    md = persisted / "MASTER_SETTING.md"
    md.unlink()
    os.mkfifo(md)
    with pytest.raises(InvalidInput, match=r"无法读取 \.story-system/MASTER_SETTING\.md：不是普通文件"):
        story_master_build(book=book, query="都市赘婿", persist=True)
    assert StorySetting.objects.get(book=book, chapter__isnull=True).query == "玄幻退婚流"


@pytest.mark.parametrize("refusal", ["too_large", "foreign", "symlink", "not_a_file"])
def test_a_persist_whose_journal_write_is_refused_writes_no_story_system_file(
    book, tmp_path, tmp_path_factory, monkeypatch, refusal
):
    # issue 25 P1: the files were written before the journal refused, leaving a rendering of a setting
    # the database (rolled back) does not have
    journal = tmp_path / ".journal"
    if refusal == "too_large":  # the append refuses (the heal before it reads the log fine)
        monkeypatch.setattr(core.journal, "MAX_EVENT_BYTES", 1000)
    elif refusal == "foreign":
        journal.mkdir()
        (journal / "log.jsonl").write_text(
            '{"seq": 0, "op": "journal.book", "book": "demo-book", "id": "' + "a" * 32 + '"}\n', encoding="utf-8"
        )
    elif refusal == "symlink":
        journal.symlink_to(tmp_path_factory.mktemp("outside"))
    else:
        (journal / "log.jsonl").mkdir(parents=True)
    with pytest.raises(Conflict if refusal == "foreign" else InvalidInput) as exc:
        story_master_build(book=book, query="玄幻退婚流", persist=True)
    assert ("单个事件上限", "属于另一本书", "指向书籍文件夹之外", "log.jsonl")[
        ["too_large", "foreign", "symlink", "not_a_file"].index(refusal)
    ] in exc.value.message
    assert not (tmp_path / ".story-system").exists()
    assert not StorySetting.objects.filter(book=book).exists()
