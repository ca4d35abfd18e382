"""``manage.py write``: the CLI door of every write tool, generated from the same declarations as the MCP
write tools (same schema, same service, same answer), with Chinese refusals and nothing written."""

import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.writes import write_tools
from bookfiles.rebuilder import book_rebuild
from core.models import Book
from memory.models import Fact
from tests.conftest import DEMO_BOOK, REPO


@pytest.fixture
def demo(db, tmp_path) -> Book:
    if not DEMO_BOOK.exists():
        pytest.skip(f"{DEMO_BOOK} is absent")
    root = shutil.copytree(DEMO_BOOK, tmp_path / "demo-book")
    assert book_rebuild(root=root)["ok"]
    return Book.objects.get(slug="demo-book")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("write", *args, stdout=out)
    return out.getvalue()


def test_list_names_every_write_tool():
    listed = [line.split("\t")[0] for line in run("list").splitlines()]
    assert listed == list(write_tools())
    assert {"chapter-finalize", "book-sync", "extraction-ingest", "memory-fact-add", "pending-confirm"} <= set(listed)


@pytest.mark.django_db
def test_a_fact_added_from_the_command_line_answers_as_the_mcp_tool(demo):
    fact = {"category": "world_rules", "subject": "雾海", "field": "潮汐", "value": "每月初一涨潮", "chapter": 5}
    created = json.loads(run("memory-fact-add", "demo-book", "--json", json.dumps(fact, ensure_ascii=False)))
    assert (created["subject"], created["value"], created["source_chapter"]) == ("雾海", "每月初一涨潮", 5)
    assert Fact.objects.get(book=demo, key=created["id"]).value == "每月初一涨潮"
    # the same tool through the MCP declaration answers the same shape
    again = write_tools()["memory-fact-add"].run(demo, {**fact, "value": "每月十五涨潮"})
    assert sorted(again) == sorted(created)


@pytest.mark.django_db
def test_bad_arguments_are_refused_in_chinese_and_write_nothing(demo):
    before = Fact.objects.count()
    with pytest.raises(CommandError, match="未知的事实类别 '天气'"):
        run(
            "memory-fact-add",
            "demo-book",
            "--json",
            '{"category": "天气", "subject": "雾海", "field": "a", "value": "b", "chapter": 5}',
        )
    with pytest.raises(CommandError, match="必须是一个 JSON 对象"):
        run("memory-fact-add", "demo-book", "--json", "[1, 2]")
    with pytest.raises(CommandError, match="arguments"):
        run("memory-fact-add", "demo-book", "--json", '{"value": NaN}')
    with pytest.raises(CommandError, match="没有写入工具「fact-add」"):
        run("fact-add", "demo-book")
    with pytest.raises(CommandError, match="缺少书籍 slug"):
        run("chapter-finalize")
    with pytest.raises(CommandError, match="参数无效：number（应为 1…10,000,000 的整数，收到 0）"):
        run("chapter-finalize", "demo-book", "--json", '{"number": 0}')
    assert Fact.objects.count() == before


@pytest.mark.django_db
def test_finalize_from_the_command_line_answers_the_report(demo):
    report = json.loads(run("chapter-finalize", "demo-book", "--json", '{"number": 3}'))
    assert (report["ok"], report["book"], report["unchanged"]) == (True, "demo-book", ["定稿/正文/第1卷/第0003章.md"])


@pytest.mark.parametrize(
    "command",
    [["write", "chapter-finalize", "demo-book", "--json", '{"number": 3}'], ["story", "thread-overdue", "demo-book"]],
)
def test_a_database_never_migrated_is_named_in_chinese_not_a_traceback(command, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["SQLITE_PATH"] = str(tmp_path / "never-migrated.sqlite3")
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "数据库还没有建表（no such table: webnovel_book）：先运行 `python manage.py migrate`" in done.stderr
    assert "Traceback" not in done.stderr
