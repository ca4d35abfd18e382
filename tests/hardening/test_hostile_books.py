"""Every hostile book folder of ``bench/adversary_books.py`` (issue 19 items 2, 3, 5–8, 13) answers with
rc 0 or a CommandError — never a traceback nor a hang — and, where it is refused, leaves the database
and the folder (the book and a folder outside it) exactly as they were."""

import pytest

from bench.adversary_books import CASES, case_run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_book_case(case, tmp_path):
    result = case_run(case, tmp_path)
    assert result["answer"] in ("rc 0", "rc 1"), result
    assert result["message"], result
    assert result["folder_unchanged"] or case.operation == "import_txt", result  # import_txt writes its out/
    if case.expect_unchanged:
        assert result["db_unchanged"], result
        if case.name != "nothing":
            # refused; a sync instead skips a file it may not read, keeps its old rows and says so
            assert result["answer"] == "rc 1" or result["message"].startswith("无法读取（已跳过，旧数据保留）"), result


def test_the_table_of_cases_answers_as_documented(tmp_path_factory):
    # A few exact answers, so that a silent change of wording or of the error code shows up here.
    by_name = {c.name: c for c in CASES}
    expected = {
        "other_folder_same_slug": ("rc 1", "[would_delete] book.yaml  拒绝重建：《敌意之书》记录的文件夹是"),
        "chapter_link_etc_passwd": (
            "rc 1",
            "[outside_book] 定稿/正文/第1卷/第0005章.md  是指向书籍文件夹之外的符号链接",
        ),
        "chapter_fifo": ("rc 1", "[unreadable] 定稿/正文/第1卷/第0005章.md  无法读取文件：不是普通文件"),
        "chapter_number_64bit": ("rc 1", "[out_of_range] 定稿/正文/第9223372036854775808章.md  文件名中的章节号"),
        "volume_negative": ("rc 1", "[out_of_range] book.yaml  number 的值 -1 超出范围（1…10,000,000）"),
        "yaml_nan": ("rc 1", "[yaml_error] 定稿/正文/第1卷/第0005章.md:3  front matter 解析失败：不支持的数值 nan"),
        "nul_in_body": ("rc 1", "[unreadable] 定稿/正文/第1卷/第0005章.md:4  文件含 NUL 字符"),
        "slug_too_long": ("rc 1", "[invalid_value] book.yaml:1  book.yaml 的 slug"),
        "card_moved_out": ("rc 0", "同步《敌意之书》：成功"),
    }
    for name, (answer, start) in expected.items():
        result = case_run(by_name[name], tmp_path_factory.mktemp(name))
        assert (result["answer"], result["message"][: len(start)]) == (answer, start), result


@pytest.mark.parametrize(
    ("command", "number", "message"),
    [
        (("finalize",), "0", "章节号必须是 1…10,000,000 的整数：0"),
        (("finalize",), "9223372036854775808", "章节号必须是 1…10,000,000 的整数：9223372036854775808"),
        (("finalize",), "-5", "章节号必须是 1…10,000,000 的整数：-5"),
        # the read's own message (the same as REST's); past 64 bits the CLI door stops it itself
        (("story", "context"), "0", "章节号必须是正整数，收到 0"),
        (("story", "context"), "9223372036854775808", "章节号必须是 1…10,000,000 的整数：9223372036854775808"),
        (("story", "context"), "-5", "章节号必须是正整数，收到 -5"),
    ],
)
def test_chapter_arguments_out_of_range_are_command_errors(tmp_path, command, number, message):
    from django.core.management import CommandError, call_command

    from bench.adversary_books import SLUG, base_book
    from bookfiles.rebuilder import book_rebuild

    assert book_rebuild(root=base_book(tmp_path / SLUG))["ok"] is True
    with pytest.raises(CommandError, match=message):
        call_command(*command, SLUG, number)
