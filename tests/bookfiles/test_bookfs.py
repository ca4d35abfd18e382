"""bookfiles.parser.book_read: pure parsing of a book folder (no database)."""

from bookfiles.parser import book_read
from bookfiles.parser.markup import entity_tags_strip, numeral_parse, sections_split
from core.fingerprint import fingerprint_compute
from tests.factories import CHAPTER_1, book_folder_make, chapter_text


def _codes(parsed):
    return [(i.code, i.file, i.line, i.level) for i in parsed.issues]


def test_mini_book_parses_cleanly(tmp_path):
    parsed = book_read(book_folder_make(tmp_path / "mini"))
    assert parsed.issues == []
    assert parsed.config.slug == "mini"
    assert parsed.config.title == "青岚剑录"
    assert parsed.config.style_baseline == (1, 2)
    assert parsed.config.thresholds == {"伏笔": 25}
    assert [(v.number, v.name, v.start_chapter, v.end_chapter) for v in parsed.config.volumes] == [
        (1, "青岚初鸣", 1, 2),
        (2, "雾海问剑", 3, 4),
    ]
    # 工作区/ and .story-system/ are never read (their broken YAML would be a yaml_error)
    assert len(parsed.files) == 15
    assert not any(f.path.startswith(("工作区", ".")) for f in parsed.files)
    book_yaml = next(f for f in parsed.files if f.path == "book.yaml")
    assert book_yaml.size == len(parsed.root.joinpath("book.yaml").read_bytes())
    assert len(book_yaml.sha256) == 64


def test_chapter_fields_and_stripped_tags(tmp_path):
    parsed = book_read(book_folder_make(tmp_path / "mini"))
    first, second, third = parsed.chapters
    assert (first.number, first.volume, first.title, first.perspective) == (1, 1, "山门夜雨", "林风")
    assert (first.chapter_position, first.mood_position, first.hook_type) == ("推进", "压抑", "危机钩-强")
    assert first.key_chapter is True
    assert (first.opens, first.advances, first.closes) == (["伏笔-001"], [], [])
    assert first.body == "夜雨如注，林风拾起断剑。\n\n“你是谁？”林风问。\n剑中传出一声叹息……\n"
    assert first.entity_tags == [{"line": 18, "text": '<entity id="linfeng" />'}]
    assert first.word_count == 32
    assert first.front_matter["story_time"] == "青岚历三百二十年·春"
    assert (second.advances, second.key_chapter) == (["伏笔-001", "悬念-001"], False)
    # volume from the 第二卷 folder (Chinese numeral)
    assert (third.number, third.volume, third.path) == (3, 2, "定稿/正文/第二卷/第0003章.md")


def test_threads_secrets_entities_documents_timeline(tmp_path):
    parsed = book_read(book_folder_make(tmp_path / "mini"))
    foreshadow, suspense = parsed.threads
    assert (foreshadow.thread_id, foreshadow.type, foreshadow.title, foreshadow.strength) == (
        "伏笔-001",
        "伏笔",
        "断剑之谜",
        "高",
    )
    assert (foreshadow.opened, foreshadow.planned_end, foreshadow.closed) == (1, 40, None)
    assert [(h.chapter, h.text, h.line) for h in foreshadow.history] == [
        (1, "林风雨夜拾得断剑，剑中有声。", 13),
        (2, "老者自称“剑中残魂”。", 14),
    ]
    assert foreshadow.description == "断剑“青岚”的来历。"
    assert foreshadow.closing_plan == "第40章前后揭示。"
    assert (suspense.thread_id, suspense.title, suspense.status) == ("悬念-001", "老者身份", "进行")
    (secret,) = parsed.secrets
    assert secret.known_to == [{"name": "剑老", "since": 2}, {"name": "林风", "since": 20}]
    assert (secret.registered, secret.reader_knows, secret.reader_told) == (2, False, None)
    assert secret.keywords == ["开派祖师", "青岚子"]
    assert secret.content == "剑中老者正是青岚宗开派祖师青岚子的残魂。"
    entities = {(e.type, e.name): e for e in parsed.entities}
    assert len(entities) == 7
    linfeng = entities[("角色", "林风")]
    assert linfeng.base_state == {
        "status": "存活",
        "location": "青岚宗",
        "realm": "炼气三层",
        "possessions": ["断剑青岚"],
    }
    assert (linfeng.tier, linfeng.protagonist) == ("核心", True)
    assert [(a.alias, a.valid_from, a.note) for a in linfeng.aliases] == [
        ("小风", None, ""),
        ("林宗主", 80, "接任宗主后"),
    ]
    assert entities[("地点", "青岚宗")].description == "东域剑修宗门"
    assert entities[("势力", "青岚宗")].line == 9
    assert entities[("角色", "王伯")].path == "设定/名册.yaml"
    docs = {(d.kind, d.key): d for d in parsed.documents}
    assert sorted(docs) == [
        ("character_card", "剑老"),
        ("character_card", "林风"),
        ("master_outline", "总纲"),
        ("style", "基调"),
        ("volume_outline", "1"),
        ("worldview", "世界观"),
    ]
    assert [(s.heading, s.body) for s in docs[("worldview", "世界观")].sections] == [
        ("", "# 世界观\n东域九宗。"),
        ("境界", "炼气、筑基。\n### 炼气\n九层。"),
        ("地理", "东域。"),
    ]
    assert [(r.volume, r.order, r.chapter, r.story_time, r.event, r.present) for r in parsed.timeline] == [
        (1, 0, 1, "青岚历三百二十年·春", "雨夜拾剑", ["林风", "剑老"]),
        (1, 1, 2, "次日", "残魂现身", ["林风", "剑老"]),
    ]


def test_chinese_numerals():
    assert [numeral_parse(t) for t in ("一", "十", "十二", "二十", "一百零三", "两千", "第", "0012", "１２")] == [
        1, 10, 12, 20, 103, 2000, None, 12, 12,
    ]  # fmt: skip


def test_volume_folders_with_chinese_digits(tmp_path):
    root = book_folder_make(
        tmp_path / "b",
        {
            "定稿/正文/第十二卷 终章/第0100章.md": chapter_text(title="终"),
            "大纲/卷纲/第十二卷.md": "## 目标\n完结。\n",
            "时间线/第12卷.md": "| 章 | 事件 |\n|---|---|\n| 100 | 完结 |\n",
        },
    )
    parsed = book_read(root)
    chapter = next(c for c in parsed.chapters if c.number == 100)
    assert (chapter.volume, chapter.folder_volume_name) == (12, "终章")
    assert ("volume_outline", "12") in {(d.kind, d.key) for d in parsed.documents}
    assert [(r.volume, r.chapter, r.event, r.present) for r in parsed.timeline if r.volume == 12] == [
        (12, 100, "完结", [])
    ]


def test_bom_crlf_and_plain_body(tmp_path):
    root = book_folder_make(tmp_path / "b")
    path = root / "定稿/正文/第0009章.md"
    path.write_bytes("\ufeff---\r\ntitle: 回车\r\n---\r\n第一行\r\n第二行\r\n".encode())
    parsed = book_read(root)
    chapter = next(c for c in parsed.chapters if c.number == 9)
    assert (chapter.title, chapter.body, chapter.word_count, chapter.volume) == ("回车", "第一行\n第二行\n", 6, None)


def test_yaml_error_has_file_and_line(tmp_path):
    bad = "---\ntitle: 好\nsummary: [未闭合\nperspective: 林风\n---\n正文\n"
    parsed = book_read(book_folder_make(tmp_path / "b", {"定稿/正文/第1卷 青岚初鸣/第0002章.md": bad}))
    errors = [(i.code, i.file, i.line, i.level) for i in parsed.errors]
    assert errors == [("yaml_error", "定稿/正文/第1卷 青岚初鸣/第0002章.md", 4, "error")]


def test_yaml_error_in_roster_and_unclosed_front_matter(tmp_path):
    parsed = book_read(
        book_folder_make(
            tmp_path / "b",
            {"设定/名册.yaml": "地点:\n  - name: 甲\n  - name: [乙\n", "线索/悬念-001.md": "---\ntitle: x\n"},
        )
    )
    assert sorted((i.code, i.file, i.line) for i in parsed.errors) == [
        ("yaml_error", "线索/悬念-001.md", 1),
        ("yaml_error", "设定/名册.yaml", 4),
    ]


def test_each_warning_code(tmp_path):
    root = book_folder_make(
        tmp_path / "b",
        {
            # 第3章 does not exist in this thread's 履历; 悬念-009 has no file
            "线索/悬念-001.md": "---\nstrength: 高\nstatus: 搁置\n---\n## 履历\n- 第2章：甲\n- 第7章：乙\n",
            "定稿/正文/第二卷/第0003章.md": "---\nchapter_position: 高潮\nmood_position: 爽\nthreads:\n  closes: [悬念-009]\n---\n正文\n",
            "设定/角色/剑老.md": "---\nname: 剑老\naliases: [小风]\n---\n",
        },
    )
    parsed = book_read(root)
    assert parsed.errors == []
    assert sorted(_codes(parsed)) == [
        ("alias_conflict", "设定/角色/林风.md", 2, "warning"),
        ("invalid_value", "定稿/正文/第二卷/第0003章.md", 2, "warning"),
        ("invalid_value", "定稿/正文/第二卷/第0003章.md", 3, "warning"),
        ("invalid_value", "线索/悬念-001.md", 3, "warning"),
        ("missing_evidence_chapter", "线索/悬念-001.md", 7, "warning"),
        ("missing_planned_end", "线索/悬念-001.md", 2, "warning"),
        ("unknown_thread", "定稿/正文/第二卷/第0003章.md", 5, "warning"),
    ]
    bad_position = next(i for i in parsed.issues if i.line == 2 and i.code == "invalid_value")
    assert "chapter_position" in bad_position.message and "高潮" in bad_position.message


def test_duplicates_are_errors(tmp_path):
    root = book_folder_make(
        tmp_path / "b",
        {
            "定稿/正文/第0001章 重复.md": chapter_text(title="重复"),
            "线索/伏笔-001 副本.md": "---\nstrength: 低\n---\n",
            "信息差/信息差-001 副本.md": "---\nid: 信息差-001\n---\n",
            "设定/角色/剑老.md": "---\nname: 剑老\nid: wangbo_id\n---\n",
            "设定/名册.yaml": "角色:\n  - name: 王伯\n    id: wangbo_id\n",
        },
    )
    parsed = book_read(root)
    assert sorted((i.code, i.file, i.line) for i in parsed.errors) == [
        ("duplicate", "信息差/信息差-001.md", None),
        ("duplicate", "定稿/正文/第1卷 青岚初鸣/第0001章.md", None),
        ("duplicate", "线索/伏笔-001 断剑之谜.md", None),
        ("duplicate", "设定/角色/剑老.md", 2),
    ]


def test_entity_tags_strip_all_forms():
    body = (
        "甲<entity id='a'/>乙\n"
        '<entity-alias id="linfeng" alias="风哥"/>\n'
        '<entity type="角色">王伯</entity>来了。\n'
        '<entity-update id="linfeng">\nrealm: 筑基\n</entity-update>\n'
        "尾\n"
    )
    clean, tags = entity_tags_strip(body, first_line=10)
    assert clean == "甲乙\n来了。\n尾\n"
    assert [t["line"] for t in tags] == [10, 11, 12, 13]
    assert tags[3]["text"] == '<entity-update id="linfeng">\nrealm: 筑基\n</entity-update>'


def test_sections_ignore_fenced_headings():
    assert sections_split("前言\n## 甲\n```\n## 不是标题\n```\n## 乙\n内容") == [
        ("", "前言", 1),
        ("甲", "```\n## 不是标题\n```", 3),
        ("乙", "内容", 7),
    ]


def test_fingerprint_counts():
    body = entity_tags_strip(CHAPTER_1.split("---\n", 2)[2])[0]
    assert fingerprint_compute(body) == {
        "chars": 32,
        "cjk_chars": 24,
        "sentences": 4,
        "paragraphs": 3,
        "dialogue_chars": 4,
        "exclamations": 0,
        "questions": 1,
        "ellipses": 1,
        "commas": 1,
        "sentence_lengths": 4,  # 夜雨如注林风拾起断剑 · 你是谁 · 林风问 · 剑中传出一声叹息
        "sentence_length_sum": 24,
        "sentence_length_sq": 10 * 10 + 3 * 3 + 3 * 3 + 8 * 8,
        "richness_windows": 0,
        "richness_types": 0,
        "phrase_ngrams": 1 + 3 + 5,
        "phrase_repeats": 0,
        "phrases": {},
    }


def test_unreadable_missing_file_and_missing_section(tmp_path):
    root = book_folder_make(tmp_path / "b", {"book.yaml": None, "大纲/总纲.md": "## 主线\n寻剑。\n"})
    (root / "文风/基调.md").write_bytes("---\ntitle: 好\n---\n第二行\n".encode() + b"\xff\n")
    parsed = book_read(root)
    assert sorted(_codes(parsed)) == [
        ("missing_file", "book.yaml", None, "warning"),
        ("missing_section", "大纲/总纲.md", None, "warning"),
        ("unreadable", "文风/基调.md", 5, "error"),
    ]
    assert parsed.config.slug == "b"


def test_symlinked_folder_cycle_is_not_followed(tmp_path):
    import os

    root = book_folder_make(tmp_path / "b")
    os.symlink(root / "线索", root / "线索" / "回环")
    parsed = book_read(root)
    assert [t.thread_id for t in parsed.threads] == ["伏笔-001", "悬念-001"]
    assert parsed.errors == []
