"""core.commands.BookCommand: every command that takes a book shares one book argument, one error
mapping (DomainError → CommandError, exit 4, details on stderr) and one --json."""

import argparse
import json

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from bookfiles.rebuilder import book_rebuild
from core.commands import BookCommand
from tests.factories import book_folder_make, book_row_make

pytestmark = pytest.mark.django_db

COMMANDS = {
    "bookfiles": ["rebuild", "sync", "finalize", "import_txt", "dump_book", "migrate_state"],
    "core": ["apikey"],
    "entities": ["discover", "export_state", "ingest", "rescan_mentions"],
    "memory": ["memory_export", "memory_health", "memory_import"],
    "storysystem": ["export_references", "import_references", "story_system"],
    "webnovel": ["demo_setup"],
}
ALL = [(app, name) for app, names in COMMANDS.items() for name in names]
# (command, arguments after the book): the ones whose first positional argument is a book slug
ON_A_BOOK = [
    ("sync", []),
    ("finalize", ["3"]),
    ("dump_book", []),
    ("discover", []),
    ("export_state", []),
    ("ingest", ["3", "{file}"]),
    ("rescan_mentions", []),
    ("memory_export", []),
    ("memory_health", []),
]


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)
        elif not isinstance(action, argparse._HelpAction):
            yield action


@pytest.mark.parametrize("app,name", ALL)
def test_every_book_command_is_a_book_command_and_every_flag_has_help(app, name):
    command = load_command_class(app, name)
    assert isinstance(command, BookCommand)
    assert command.help
    parser = command.create_parser("manage.py", name)
    missing = [a.dest for a in _actions(parser) if not a.help]
    assert missing == []
    assert "--json" in {s for a in _actions(parser) for s in a.option_strings}


@pytest.mark.parametrize("name,rest", ON_A_BOOK)
def test_an_unknown_book_is_one_chinese_error_with_exit_4(name, rest, tmp_path, capsys):
    (tmp_path / "extraction.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CommandError, match="^书籍 'nobook' 不存在$") as caught:
        call_command(name, "nobook", *[a.format(file=tmp_path / "extraction.json") for a in rest])
    assert caught.value.returncode == 4
    err = capsys.readouterr().err
    if load_command_class(*next((a, n) for a, n in ALL if n == name)).json_default:
        assert json.loads(err) == {"message": "书籍 'nobook' 不存在", "extra": {"book": "nobook"}}
    else:
        assert err == ""


def test_json_puts_the_rest_body_on_stderr_and_format_json_is_its_alias(capsys):
    for flags in (["--json"], ["--format", "json"]):
        with pytest.raises(CommandError, match="书籍 'nobook' 不存在"):
            call_command("sync", "nobook", *flags)
        assert json.loads(capsys.readouterr().err) == {"message": "书籍 'nobook' 不存在", "extra": {"book": "nobook"}}


def test_format_json_prints_the_same_report_as_json(tmp_path, capsys):
    root = book_folder_make(tmp_path / "mini")
    book_rebuild(root=root)
    call_command("sync", "mini", "--json")
    with_json = capsys.readouterr().out
    call_command("sync", "mini", "--format", "json")
    assert capsys.readouterr().out == with_json
    assert json.loads(with_json)["book"] == "mini"
    call_command("sync", "mini", "--format", "text")
    assert capsys.readouterr().out.startswith("同步《青岚剑录》：成功")


def test_rebuild_takes_a_folder_or_the_slug_of_a_book_already_built(tmp_path, capsys):
    root = book_folder_make(tmp_path / "mini")
    call_command("rebuild", str(root))
    first = capsys.readouterr().out
    assert first.startswith("重建《青岚剑录》：成功")
    call_command("rebuild", "mini")
    assert capsys.readouterr().out == first
    with pytest.raises(CommandError, match="^书籍文件夹不存在：no-such-book$"):
        call_command("rebuild", "no-such-book")


@pytest.mark.parametrize(
    "args,message",
    [
        (["memory_health", "qinglan", "--chapter", "99999999999999999999"], "--chapter 章节号必须是 1…10,000,000"),
        (["rescan_mentions", "qinglan", "--to", "99999999999999999999"], "--to 章节号必须是 1…10,000,000"),
        (["finalize", "qinglan", "0"], "章节号必须是 1…10,000,000 的整数：0"),
        (["story_system", "压抑", "--book", "qinglan", "--chapter", "99999999999999999999"], "--chapter 章号必须"),
    ],
)
def test_a_chapter_number_out_of_range_is_refused_at_the_door(args, message):
    book_row_make(chapters=2)
    with pytest.raises(CommandError, match=message):
        call_command(*args)


def test_text_mode_lists_each_error_of_a_domain_error_on_stderr(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("编号,关键词\n,打斗\n,跑路\n", encoding="utf-8")
    with pytest.raises(CommandError, match="导入失败：2 处错误") as caught:
        call_command("import_references", str(tmp_path))
    assert caught.value.returncode == 4
    assert capsys.readouterr().err.splitlines() == ["bad.csv 第2行：缺少编号", "bad.csv 第3行：缺少编号"]
    with pytest.raises(CommandError, match="导入失败：2 处错误"):
        call_command("import_references", str(tmp_path), "--json")
    body = json.loads(capsys.readouterr().err)
    assert body["extra"]["errors"] == ["bad.csv 第2行：缺少编号", "bad.csv 第3行：缺少编号"]
