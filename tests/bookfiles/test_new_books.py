"""New and imported books: a book without volumes, a book without a style baseline, and messages
that name a book by its title (《青岚剑录》), not its slug."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bookfiles.rebuilder import book_rebuild
from core.models import Book
from tests.factories import book_folder_make, chapter_text

pytestmark = pytest.mark.django_db

# book.yaml without volumes:, chapters straight under 定稿/正文/ (what import_txt writes for a
# novel without 卷 headings), and the timeline of the whole book in 时间线/第1卷.md.
VOLUMELESS = {
    "book.yaml": "slug: flat\ntitle: 青石镇夜话\ngenre: 悬疑\n",
    "定稿/正文/第1卷 青岚初鸣/第0001章.md": None,
    "定稿/正文/第1卷 青岚初鸣/第0002章.md": None,
    "定稿/正文/第二卷/第0003章.md": None,
    "定稿/正文/第0001章.md": chapter_text(title="夜雨", body="林风拾剑。"),
    "定稿/正文/第0002章.md": chapter_text(title="残魂", body="剑老现身。"),
    "定稿/正文/第0003章.md": chapter_text(title="雾海", body="雾海茫茫。"),
    "大纲/卷纲/第1卷.md": None,
    "时间线/第一卷.md": None,
    "时间线/第1卷.md": (
        "| 章 | 书内时间 | 事件 | 在场人物 |\n|---|---|---|---|\n"
        "| 1 | 春 | 雨夜拾剑 | 林风、剑老 |\n| 3 | 夏 | 入雾海 | 小风 |\n"
    ),
}


def story(*args: str):
    out = StringIO()
    call_command("story", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def flat(tmp_path, db):
    report = book_rebuild(root=book_folder_make(tmp_path / "flat", VOLUMELESS))
    assert report["ok"], report["errors"]
    book = Book.objects.get(slug="flat")
    assert not book.volumes.exists()
    return book


def test_timeline_reads_count_a_book_without_volumes_as_one(flat, api):
    rows = [
        {"chapter": 1, "story_time": "春", "event": "雨夜拾剑", "present": ["林风", "剑老"]},
        {"chapter": 3, "story_time": "夏", "event": "入雾海", "present": ["小风"]},
    ]
    assert story("timeline-current", "flat") == {"volume": 1, "rows": rows}
    assert api.get("/api/books/flat/timeline/current").json() == {"volume": 1, "rows": rows}
    assert api.get("/api/books/flat/timeline/recent").json() == [{"volume": 1, "rows": rows}]
    assert api.get("/api/books/flat/timeline/volumes/1").json() == {"volume": 1, "rows": rows}
    # By an alias, within the one volume.
    mine = api.get("/api/books/flat/timeline/character", {"name": "小风", "volume": 1}).json()
    assert (mine["character"], [r["chapter"] for r in mine["rows"]]) == ("林风", [1, 3])
    # There is no second volume.
    missing = api.get("/api/books/flat/timeline/volumes/2")
    assert (missing.status_code, missing.json()["message"]) == (404, "第2卷不存在（《青石镇夜话》）")


def test_a_volumeless_book_without_a_timeline_answers_empty(tmp_path, db, api):
    files = {**VOLUMELESS, "时间线/第1卷.md": None}
    assert book_rebuild(root=book_folder_make(tmp_path / "flat", files))["ok"]
    assert api.get("/api/books/flat/timeline/current").json() == {"volume": 1, "rows": []}


def test_style_drift_without_a_baseline_says_how_to_set_it(flat, api):
    resp = api.get("/api/books/flat/reports/style-drift")
    assert resp.status_code == 404
    assert resp.json()["message"] == (
        "《青石镇夜话》的 book.yaml 没有设置 style_baseline（文风基线：以哪几章的文风为准），无法比较文风漂移。"
        "请在书籍文件夹的 book.yaml 里加一行，例如：style_baseline: [1, 3]（以第1–3章为基线），然后运行 sync。"
    )
    with pytest.raises(CommandError, match=r"例如：style_baseline: \[1, 3\]"):
        story("report-style-drift", "flat")


def test_messages_name_the_book_by_its_title(flat, tmp_path, capsys, api):
    call_command("rebuild", str(tmp_path / "flat"))
    assert "重建《青石镇夜话》：成功" in capsys.readouterr().out
    call_command("sync", "flat")
    assert "同步《青石镇夜话》：成功" in capsys.readouterr().out
    assert api.get("/api/books/flat/chapters/9").json()["message"] == "第9章不存在（《青石镇夜话》）"
    assert (
        api.get("/api/books/flat/story-system/master")
        .json()["message"]
        .startswith("《青石镇夜话》还没有故事系统总设定")
    )
    resp = api.get("/api/books/flat/memory/facts/nope")
    assert resp.json()["message"] == "《青石镇夜话》中没有 key 为 'nope' 的记忆事实"
