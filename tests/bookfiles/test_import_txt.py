"""import_txt: heading rules, encodings, volumes, numbering issues, the command, and 西游记."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from bookfiles.importers.txt import Heading, Rejected, cn_number_parse, heading_parse, txt_decode, txt_parse
from tests.conftest import CORPUS

XIYOUJI = CORPUS / "xiyouji.txt"
needs_corpus = pytest.mark.skipif(not XIYOUJI.is_file(), reason=f"corpus absent: {XIYOUJI}")


# --- numerals and single lines -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("一", 1),
        ("十", 10),
        ("十二", 12),
        ("二十", 20),
        ("一百零五", 105),
        ("一百二十", 120),
        ("一零零", 100),
        ("〇〇一", 1),
        ("两百", 200),
        ("一千零一", 1001),
        ("三万二千", 32000),
        ("12", 12),
        ("００７", 7),
        ("一x", None),
    ],
)
def test_cn_number_parse(text, value):
    assert cn_number_parse(text) == value


@pytest.mark.parametrize(
    ("line", "kind", "number", "title"),
    [
        ("第一回", "chapter", 1, ""),
        ("第十二章 山雨欲来", "chapter", 12, "山雨欲来"),
        ("第一百二十回　甲乙之事　丙丁之争", "chapter", 120, "甲乙之事 丙丁之争"),
        ("第一零零回 归去", "chapter", 100, "归去"),
        ("第12章", "chapter", 12, ""),
        ("第〇〇一回 开篇", "chapter", 1, "开篇"),
        ("第两百章 终局", "chapter", 200, "终局"),
        ("第１２章 全角数字", "chapter", 12, "全角数字"),
        ("《》目录 第一回　灵根育孕源流出　心性修持大道生", "chapter", 1, "灵根育孕源流出 心性修持大道生"),
        ("正文 第3章", "chapter", 3, ""),
        ("正文第3章 标题", "chapter", 3, "标题"),
        ("VIP章节 第5章 标题", "chapter", 5, "标题"),
        ("　　第四章　雨夜", "chapter", 4, "雨夜"),
        ("第三章：夜雨", "chapter", 3, "夜雨"),
        ("第三章  两个   空格", "chapter", 3, "两个 空格"),
        ("【第一章】 开始", "chapter", 1, "开始"),
        ("【第一章 开始】", "chapter", 1, "开始"),
        ("第三节 小节", "chapter", 3, "小节"),
        ("第一卷 青云", "volume", 1, "青云"),
        ("第二卷", "volume", 2, ""),
        ("卷一", "volume", 1, ""),
        ("卷三 风起", "volume", 3, "风起"),
    ],
)
def test_heading_accepted(line, kind, number, title):
    heading = heading_parse(line, number=7)
    assert isinstance(heading, Heading)
    assert (heading.kind, heading.number, heading.title, heading.line) == (kind, number, title, 7)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("他在第三回合时说", "标题号前紧接正文，像是句中提及"),
        ("见第十二回", "标题号前紧接正文，像是句中提及"),
        ("第三回合，他败了。", "标题号后紧接文字，像是句中提及"),
        ("第一章开始", "标题号后紧接文字，像是句中提及"),
        ("作者有话说：第一章写完了", "标题前有句读标点，像是正文中的提及"),
        ("“第十二章 你看过吗”", "标题前有句读标点，像是正文中的提及"),
        ("第一章 完。", "标题含句号或引号，像是正文"),
        ("第五章 他说“走”", "标题含句号或引号，像是正文"),
        ("第一章 " + "很长" * 40, "行太长，不像标题"),
    ],
)
def test_heading_rejected(line, reason):
    rejected = heading_parse(line, number=3)
    assert rejected == Rejected(3, line[:60], reason)


@pytest.mark.parametrize("line", ["第一次见面", "他说了第二遍", "", "　　林风拔剑。", "卷起袖子"])
def test_ordinary_lines_are_not_headings(line):
    assert heading_parse(line, number=1) is None


# --- whole texts ---------------------------------------------------------------------------------


def test_parse_chapters_preface_and_bodies():
    text = "《青岚》\n作者的话\n\n第一章 山门\n　　林风拔剑。\n\n　　雨落。\n第二章　夜\n他说：“走。”\n"
    book = txt_parse(text)
    assert book.title == "青岚"
    assert book.preface == "作者的话"
    assert [(c.number, c.title, c.body) for c in book.chapters] == [
        (1, "山门", "林风拔剑。\n\n雨落。"),
        (2, "夜", "他说：“走。”"),
    ]
    assert book.characters == 5 + 3 + 7
    report = book.report()
    assert report["chapters"] == 2
    assert report["heading_marker"] == "章"
    assert report["gaps"] == []
    assert report["duplicates"] == []
    assert report["rejected"] == []
    assert report["preface_characters"] == 4
    assert report["characters"] == 15


def test_parse_in_sentence_mentions_stay_in_the_body():
    text = "第一回 起\n他在第三回合时说，见第十二回。\n见第十二回\n第二回 承\n正文\n"
    book = txt_parse(text)
    assert [c.number for c in book.chapters] == [1, 2]
    assert book.chapters[0].body == "他在第三回合时说，见第十二回。\n\n见第十二回"
    assert [r.as_dict() for r in book.rejected] == [
        {"line": 2, "text": "他在第三回合时说，见第十二回。", "reason": "标题号前紧接正文，像是句中提及"},
        {"line": 3, "text": "见第十二回", "reason": "标题号前紧接正文，像是句中提及"},
    ]


def test_parse_volumes_with_ranges_and_intro():
    text = "第一卷 青云\n卷首语\n第一章 甲\n一\n第二章 乙\n二\n卷二 风起\n第三章 丙\n三\n"
    book = txt_parse(text)
    assert [v.as_dict() for v in book.volumes] == [
        {"number": 1, "name": "青云", "chapters": [1, 2], "line": 1, "intro_characters": 3},
        {"number": 2, "name": "风起", "chapters": [3, 3], "line": 7, "intro_characters": 0},
    ]
    assert [(c.number, c.volume) for c in book.chapters] == [(1, 1), (2, 1), (3, 2)]
    assert book.volumes[0].intro == "卷首语"
    assert book.report()["unassigned_chapters"] == []


def test_parse_reports_gaps_and_duplicates():
    text = "第1章 a\n一\n第2章 b\n二\n第2章 b2\n二二\n第5章 e\n五\n"
    book = txt_parse(text)
    assert book.gaps == [[3, 4]]
    assert book.missing == 2
    assert book.duplicates == [2]
    assert [c.number for c in book.chapters] == [1, 2, 2, 5]
    renumbered = txt_parse(text, renumber=True)
    assert [(c.number, c.heading_number, c.title) for c in renumbered.chapters] == [
        (1, 1, "a"),
        (2, 2, "b"),
        (3, 2, "b2"),
        (4, 5, "e"),
    ]
    assert renumbered.report()["renumbered"] is True


def test_parse_skips_a_table_of_contents_without_a_marker_line():
    book = txt_parse("第一章 甲\n第二章 乙\n\n第一章 甲\n一\n第二章 乙\n二\n")
    assert (book.toc_skipped, book.preface, [c.body for c in book.chapters]) == (
        2,
        "第一章 甲\n\n第二章 乙",
        ["一", "二"],
    )


def test_parse_skips_a_table_of_contents():
    text = "目录\n第一章 甲\n第二章 乙\n正文\n第一章 甲\n一\n第二章 乙\n二\n"
    book = txt_parse(text)
    assert book.toc_skipped == 2
    assert book.duplicates == []
    assert [(c.number, c.body) for c in book.chapters] == [(1, "一"), (2, "二")]
    assert book.preface == "目录\n\n第一章 甲\n\n第二章 乙\n\n正文"


def test_parse_sections_inside_chapters_stay_in_the_body():
    text = "第一章 甲\n第一节 上\n一\n第二节 下\n二\n第二章 乙\n三\n"
    book = txt_parse(text)
    assert book.marker == "章"
    assert [c.number for c in book.chapters] == [1, 2]
    assert book.chapters[0].body == "第一节 上\n\n一\n\n第二节 下\n\n二"
    assert [r.reason for r in book.rejected] == ["「节」不是本书的章节标记", "「节」不是本书的章节标记"]


def test_parse_crlf_and_no_chapters():
    book = txt_parse("第一回 甲\r\n一\r\n第二回 乙\r\n二")
    assert [(c.title, c.body) for c in book.chapters] == [("甲", "一"), ("乙", "二")]
    empty = txt_parse("只是一段话。\n没有标题。")
    assert empty.chapters == []
    assert empty.report()["first_chapter"] is None


# --- encodings -----------------------------------------------------------------------------------

SAMPLE = "第一章 山门\n林风拔剑。\n"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (SAMPLE.encode("utf-8"), "utf-8"),
        (b"\xef\xbb\xbf" + SAMPLE.encode("utf-8"), "utf-8-sig"),
        (SAMPLE.encode("gb18030"), "gb18030"),
        (SAMPLE.encode("utf-16"), "utf-16"),
    ],
)
def test_txt_decode(data, encoding):
    text, found = txt_decode(data)
    assert (text, found) == (SAMPLE, encoding)
    assert txt_parse(text).chapters[0].title == "山门"


# --- the command ---------------------------------------------------------------------------------


def run(*args) -> str:
    out = StringIO()
    call_command("import_txt", *[str(a) for a in args], stdout=out)
    return out.getvalue()


@pytest.fixture
def novel(tmp_path) -> Path:
    path = tmp_path / "青岚.txt"
    path.write_text(
        "《青岚剑录》\n序。\n第一卷 初鸣\n第一章 山门\n　　拔剑。\n第二章 夜雨\n雨。\n卷二\n第三章 远行\n走。\n"
    )
    return path


def test_command_writes_the_book_folder(novel, tmp_path):
    out = tmp_path / "book"
    report = json.loads(run(novel, out, "--json", "--slug", "qinglan"))
    assert report["encoding"] == "utf-8"
    assert report["title"] == "青岚剑录"
    assert report["chapters"] == 3
    assert report["characters"] == 7
    assert report["files"] == [
        "book.yaml",
        "定稿/正文/第1卷/第0001章.md",
        "定稿/正文/第1卷/第0002章.md",
        "定稿/正文/第2卷/第0003章.md",
        "定稿/前言.md",
    ]
    assert (out / "book.yaml").read_text(encoding="utf-8") == (
        "# 由 import_txt 从 青岚.txt 导入（编码 utf-8）\n"
        "slug: qinglan\n"
        "title: 青岚剑录\n"
        "volumes:\n"
        "- number: 1\n  name: 初鸣\n  chapters: [1, 2]\n"
        "- number: 2\n  name: ''\n  chapters: [3, 3]\n"
    )
    assert (out / "定稿/正文/第1卷/第0001章.md").read_text(encoding="utf-8") == "---\ntitle: 山门\n---\n拔剑。\n"
    assert (out / "定稿/前言.md").read_text(encoding="utf-8") == "序。\n"


def test_command_text_report_and_title_option(novel, tmp_path):
    text = run(novel, tmp_path / "b", "--title", "别名")
    assert text.splitlines()[0] == "《别名》 编码 utf-8，3 章（第1–3章，标记「章」），正文 7 字"
    assert "已写入 5 个文件" in text


def test_command_refuses_a_non_empty_folder_without_force(novel, tmp_path):
    out = tmp_path / "book"
    (out / "定稿" / "正文").mkdir(parents=True)
    (out / "定稿" / "正文" / "第0009章.md").write_text("旧")
    (out / "设定").mkdir()
    (out / "设定" / "世界观.md").write_text("## 保留")
    with pytest.raises(CommandError, match="输出文件夹非空"):
        run(novel, out)
    run(novel, out, "--force")
    assert not (out / "定稿" / "正文" / "第0009章.md").exists()
    assert (out / "定稿" / "正文" / "第1卷" / "第0001章.md").exists()
    assert (out / "设定" / "世界观.md").read_text() == "## 保留"


def test_command_gb18030_and_dry_run(tmp_path):
    source = tmp_path / "gbk.txt"
    source.write_bytes("第一回 甲\n一\n第三回 丙\n三\n".encode("gb18030"))
    report = json.loads(run(source, tmp_path / "out", "--json", "--dry-run"))
    assert report["encoding"] == "gb18030"
    assert report["gaps"] == [[2, 2]]
    assert report["missing"] == 1
    assert report["files"] == []
    assert not (tmp_path / "out").exists()


def test_command_duplicates_need_renumber(tmp_path):
    source = tmp_path / "dup.txt"
    source.write_text("第1章 a\n一\n第1章 b\n二\n")
    with pytest.raises(CommandError, match="章节编号重复：1；加 --renumber"):
        run(source, tmp_path / "out")
    report = json.loads(run(source, tmp_path / "out", "--renumber", "--json"))
    assert report["files"] == ["book.yaml", "定稿/正文/第0001章.md", "定稿/正文/第0002章.md"]


def test_command_errors(tmp_path):
    with pytest.raises(CommandError, match="找不到 txt 文件"):
        run(tmp_path / "missing.txt", tmp_path / "out")
    plain = tmp_path / "plain.txt"
    plain.write_text("没有标题的一段话。")
    with pytest.raises(CommandError, match="没有找到章节标题"):
        run(plain, tmp_path / "out")
    with pytest.raises(CommandError, match="slug 不合法"):
        run(plain, tmp_path / "out", "--slug", "a b")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x80\xff\xfe\x80")
    with pytest.raises(CommandError, match="无法识别编码"):
        run(binary, tmp_path / "out")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    novel = tmp_path / "ok.txt"
    novel.write_text("第一章 甲\n一\n")
    with pytest.raises(CommandError, match="输出路径不是文件夹"):
        run(novel, not_a_folder)


@pytest.mark.django_db
def test_imported_folder_rebuilds_cleanly(novel, tmp_path):
    from bookfiles.rebuilder import book_rebuild

    out = tmp_path / "book"
    run(novel, out, "--slug", "qinglan")
    report = book_rebuild(root=out)
    assert report["errors"] == []
    assert report["warnings"] == []
    assert (report["counts"]["chapters"], report["counts"]["volumes"], report["counts"]["words"]) == (3, 2, 7)


# --- 西游记 --------------------------------------------------------------------------------------

XIYOUJI_CHARACTERS = 713459  # non-whitespace body characters of the 100 回 (headings and 《西游记》 excluded)


@needs_corpus
@pytest.mark.corpus
def test_xiyouji_splits_into_100_chapters():
    text, encoding = txt_decode(XIYOUJI.read_bytes())
    book = txt_parse(text)
    assert encoding == "utf-8"
    assert book.title == "西游记"
    assert [c.number for c in book.chapters] == list(range(1, 101))
    assert book.chapters[0].title == "灵根育孕源流出 心性修持大道生"
    assert book.chapters[13].title == "心猿归正 六贼无踪"
    assert book.chapters[99].title == "径回东土 五圣成真"
    assert book.chapters[0].body.startswith("诗曰：\n\n混沌未分天地乱，茫茫渺渺无人见。")
    assert book.chapters[99].body.endswith("《西游记》至此终。")
    assert book.characters == XIYOUJI_CHARACTERS
    report = book.report()
    assert (report["gaps"], report["duplicates"], report["rejected"], report["preface_characters"]) == ([], [], [], 0)


@needs_corpus
@pytest.mark.corpus
@pytest.mark.django_db
def test_xiyouji_import_and_rebuild(tmp_path):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Chapter

    out = tmp_path / "xiyouji"
    report = json.loads(run(XIYOUJI, out, "--slug", "xiyouji", "--json"))
    assert report["chapters"] == 100
    assert len(report["files"]) == 101
    rebuilt = book_rebuild(root=out)
    assert rebuilt["errors"] == []
    assert rebuilt["warnings"] == []
    assert rebuilt["counts"]["chapters"] == 100
    assert rebuilt["counts"]["words"] == XIYOUJI_CHARACTERS
    assert Chapter.objects.get(book__slug="xiyouji", number=100).title == "径回东土 五圣成真"


# --- absurd numbers, gaps as ranges, --force writes aside (issue 19 item 5) -------------------------


def test_gaps_are_ranges_computed_from_the_numbers_seen():
    book = txt_parse("第1章 a\n一\n第3000000章 b\n二\n第3000005章 c\n三\n")
    assert book.gaps == [[2, 2999999], [3000001, 3000004]]
    assert book.missing == 2999998 + 4
    assert len(json.dumps(book.report())) < 2000


def test_gap_ranges_are_bounded_in_number():
    book = txt_parse("".join(f"第{n}章 t\n正文\n" for n in range(1, 600, 2)))
    assert len(book.gaps) == 100 and book.gaps[0] == [2, 2]
    assert book.missing == 299


def test_a_64_bit_heading_is_a_clear_error_naming_the_line(tmp_path):
    source = tmp_path / "huge.txt"
    source.write_text("第1章 起\n一\n第9223372036854775808章 终\n二\n", encoding="utf-8")
    book = txt_parse(source.read_text(encoding="utf-8"))
    assert [r.as_dict() for r in book.out_of_range] == [
        {
            "line": 3,
            "text": "第9223372036854775808章 终",
            "reason": "章节号 9223372036854775808 超出范围（1…10,000,000）",
        }
    ]
    with pytest.raises(CommandError) as exc:
        run(source, tmp_path / "out")
    assert str(exc.value) == (
        f"{source}:3：章节号 9223372036854775808 超出范围（1…10,000,000）：第9223372036854775808章 终"
        "；章节号可加 --renumber 按出现顺序重新编号"
    )
    assert not (tmp_path / "out").exists()
    report = json.loads(run(source, tmp_path / "out", "--renumber", "--json"))
    assert report["files"] == ["book.yaml", "定稿/正文/第0001章.md", "定稿/正文/第0002章.md"]


def test_an_absurd_volume_number_is_refused_even_with_renumber(tmp_path):
    source = tmp_path / "vol.txt"
    source.write_text("第一章 甲\n一\n第99999999卷 乙\n第二章 丙\n二\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r":3：卷号 99999999 超出范围"):
        run(source, tmp_path / "out", "--renumber")


def test_force_writes_aside_and_keeps_the_old_chapters_when_the_write_fails(novel, tmp_path, monkeypatch):
    from bookfiles.importers import folder

    out = tmp_path / "book"
    run(novel, out)
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    real = folder.book_file_write
    calls = {"n": 0}

    def full_disk(**kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise folder.InvalidInput("写入失败：No space left on device（原文件未改动）")
        return real(**kwargs)

    monkeypatch.setattr(folder, "book_file_write", full_disk)
    with pytest.raises(CommandError, match="No space left on device"):
        run(novel, out, "--force")
    after = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert after == before  # the old 定稿/正文/ is whole, and no staging folder is left behind
    assert not [p for p in out.iterdir() if p.name.startswith(".import-")]


def test_force_refuses_a_symlinked_chapter_folder(novel, tmp_path):
    out = tmp_path / "book"
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "定稿").mkdir(parents=True)
    (out / "book.yaml").write_text("slug: x\n")
    (out / "定稿" / "正文").symlink_to(outside)
    with pytest.raises(CommandError, match="符号链接"):
        run(novel, out, "--force")
    assert list(outside.iterdir()) == []


def test_an_oversized_source_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from bookfiles.management.commands import import_txt

    monkeypatch.setattr(import_txt, "TXT_MAX_BYTES", 100)
    source = tmp_path / "big.txt"
    source.write_text("第1章 起\n" + "字" * 100 + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"无法读取 txt 文件 .*big.txt：文件过大（313 字节，上限 100 字节）"):
        run(source, tmp_path / "out")
