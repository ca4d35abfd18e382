"""Every read interface on 西游记: the real novel imported with ``import_txt`` (100 回), plus a few
curated files written here (cards for the 15 main characters, three volumes, timelines, three
threads, two secrets, outlines, worldview, a little chapter front matter), then rebuilt.

Expected values are computed independently from the chapter files (plain substring / ``re`` scans
of the bodies) or are facts of the novel, and every interface is also checked CLI == REST."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from core.models import Book
from tests.conftest import CORPUS

pytestmark = [pytest.mark.django_db, pytest.mark.corpus]

TEXT = CORPUS / "xiyouji.txt"
GOLD = CORPUS / "xiyouji_aliases.json"

BOOK_YAML = {
    "slug": "xiyouji",
    "title": "西游记",
    "genre": "神魔",
    "volumes": [
        {"number": 1, "name": "大闹天宫", "chapters": [1, 7]},
        {"number": 2, "name": "取经缘起", "chapters": [8, 12]},
        {"number": 3, "name": "西天取经", "chapters": [13, 100]},
    ],
    "style_baseline": [1, 10],
}
# Aliases that name two characters on purpose: 三太子 is both 哪吒 and 玉龙三太子 (白龙马).
SHARED_ALIAS = {"哪吒": ["三太子"], "白龙马": ["三太子"]}
STATUS = {"孙悟空": "成佛", "唐僧": "成佛", "猪八戒": "成佛", "沙僧": "成佛", "白龙马": "成佛"}
FRONT = {
    1: {"perspective": "孙悟空", "chapter_position": "推进", "summary": "石猴出世，拜为美猴王，出海学艺。"},
    56: {"threads": {"opens": ["悬念-001"]}},
    58: {"threads": {"advances": ["悬念-001"]}, "chapter_position": "推进"},
    98: {"hook_type": "悬念钩-中"},
    99: {"hook_type": "期待钩-弱"},
    100: {"hook_type": "情感钩-弱", "chapter_position": "日常"},
}
FILES = {
    "大纲/总纲.md": "## 主线\n师徒四人西天取经，历九九八十一难。\n\n## 结局\n五圣成真，径回东土。\n",
    "大纲/卷纲/第3卷.md": "## 卷旨\n西天路上八十一难。\n\n## 收束\n灵山见佛，五圣成真。\n",
    "设定/世界观.md": "## 四大部洲\n东胜神洲、西牛贺洲、南赡部洲、北俱芦洲。\n\n## 天庭\n玉帝统御三界。\n",
    "时间线/第1卷.md": (
        "| 章 | 书内时间 | 事件 | 在场人物 |\n|---|---|---|---|\n"
        "| 1 | 上古 | 石猴出世 | 石猴 |\n| 2 | 上古 | 拜师学艺 | 悟空、须菩提祖师 |\n"
        "| 3 | 上古 | 龙宫得宝 | 美猴王 / 龙王 |\n| 4 | 上古 | 官封弼马温 | 弼马温，玉帝 |\n"
        "| 5 | 上古 | 搅乱蟠桃会 | 齐天大圣、太上老君 |\n| 6 | 上古 | 小圣施威 | 观音、二郎 |\n"
        "| 7 | 上古 | 五行山下定心猿 | 如来、孙大圣 |\n"
    ),
    "时间线/第2卷.md": (
        "| 章 | 书内时间 | 事件 | 在场人物 |\n|---|---|---|---|\n"
        "| 8 | 贞观十三年 | 观音寻取经人 | 观音菩萨、沙悟净、猪悟能 |\n| 12 | 贞观十三年 | 水陆大会 | 玄奘、唐王 |\n"
    ),
    "时间线/第3卷.md": (
        "| 章 | 书内时间 | 事件 | 在场人物 |\n|---|---|---|---|\n"
        "| 98 | 贞观二十七年 | 凌云渡脱凡胎 | 唐僧、孙悟空、八戒、沙僧 |\n| 99 | 贞观二十七年 | 九九数完 | 唐僧、观音 |\n"
        "| 100 | 贞观二十七年 | 五圣成真 | 唐僧、行者孙悟空、唐太宗 |\n"
    ),
    "线索/伏笔-001.md": (
        "---\nid: 伏笔-001\ntitle: 五行山之约\nstrength: 高\nstatus: 已收尾\nopened: 7\nplanned_end: 14\nclosed: 14\n---\n"
        "## 描述\n大圣被压五行山下，待取经人来救。\n\n## 履历\n- 第7章：如来压大圣于五行山下。\n"
        "- 第8章：观音路过五行山，许他保唐僧取经。\n- 第14章：唐僧揭帖，心猿归正。\n\n## 收尾计划\n第14章唐僧揭去六字真言。\n"
    ),
    "线索/悬念-001.md": (
        "---\nid: 悬念-001\ntitle: 真假美猴王\nstrength: 中\nstatus: 进行\nopened: 56\n---\n"
        "## 描述\n两个行者，谁真谁假。\n\n## 履历\n- 第57章：假行者打伤唐僧，抢走行李。\n"
    ),
    "线索/感情线-001.md": (
        "---\nid: 感情线-001\ntitle: 八戒与高翠兰\nstrength: 低\nstatus: 进行\nopened: 18\n---\n"
        "## 描述\n高老庄的旧缘。\n\n## 履历\n- 第19章：八戒临行仍叮嘱丈人照看浑家。\n"
    ),
    "信息差/信息差-001.md": (
        "---\nid: 信息差-001\ntitle: 假行者是六耳猕猴\nknown_to:\n  - 如来\n  - {name: 孙悟空, since: 58}\n"
        "reader_knows: true\nreader_told: 58\nregistered: 56\nkeywords: [六耳猕猴]\n---\n假行者乃六耳猕猴所变。\n"
    ),
    "信息差/信息差-002.md": (
        "---\nid: 信息差-002\ntitle: 唐僧前世\nknown_to: [如来, 观音]\nreader_knows: false\nregistered: 12\n"
        "keywords: [金蝉子]\n---\n唐僧前世乃如来二徒金蝉子。\n"
    ),
}


def _write_card(root: Path, character: dict) -> None:
    name = character["name"]
    aliases = [a["alias"] for a in character["aliases"] if not a["ambiguous"] and a["alias"] != name]
    front = {
        "name": name,
        "aliases": aliases + SHARED_ALIAS.get(name, []),
        "tier": "核心" if name in STATUS else "重要",
    }
    front["status"] = STATUS.get(name, "在世")
    body = f"## 出处\n《西游记》人物{name}。\n"
    text = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n" + body
    (root / "设定" / "角色" / f"{name}.md").write_text(text, encoding="utf-8")


def _chapter_file(root: Path, number: int) -> Path:
    return root / "定稿" / "正文" / f"第{number:04d}章.md"


def _split(text: str) -> tuple[dict, str]:
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


@pytest.fixture(scope="module")
def xiyouji(django_db_setup, django_db_blocker, tmp_path_factory):
    if not TEXT.exists() or not GOLD.exists():
        pytest.skip(f"需要 {TEXT} 和 {GOLD}（../shared/corpus 不存在）")
    from bookfiles.rebuilder import book_rebuild

    root = tmp_path_factory.mktemp("xiyouji") / "xiyouji"
    call_command("import_txt", str(TEXT), str(root), stdout=StringIO())
    (root / "book.yaml").write_text(yaml.safe_dump(BOOK_YAML, allow_unicode=True), encoding="utf-8")
    (root / "设定" / "角色").mkdir(parents=True)
    for character in json.loads(GOLD.read_text(encoding="utf-8"))["characters"]:
        _write_card(root, character)
    for relpath, text in FILES.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text, encoding="utf-8")
    for number, extra in FRONT.items():
        front, body = _split(_chapter_file(root, number).read_text(encoding="utf-8"))
        front.update(extra)
        text = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n" + body
        _chapter_file(root, number).write_text(text, encoding="utf-8")
    bodies = {n: _split(_chapter_file(root, n).read_text(encoding="utf-8"))[1] for n in range(1, 101)}
    with django_db_blocker.unblock():
        report = book_rebuild(root=root)
        assert report["ok"], report["errors"]
        yield bodies
        Book.objects.filter(slug="xiyouji").delete()


def story(*args: str):
    out = StringIO()
    call_command("story", *args, stdout=out)
    text = out.getvalue()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text[:-1] if text.endswith("\n") else text


def both(api, path: str, *cli: str, **query):
    """The CLI answer, after checking that REST gives the same."""
    answer = story(*cli)
    rest = api.get(f"/api/books/xiyouji/{path}", query)
    assert rest.status_code == 200, rest.content
    body = rest.json()
    if isinstance(answer, str):
        assert body.rstrip("\n") == answer.rstrip("\n")
    else:
        assert body == answer
    return answer


def lines_with(bodies: dict[int, str], pattern: str, *, regex: bool = False) -> list[tuple[int, int]]:
    """Independent scan: (chapter, line) of every non-blank body line matching."""
    found = []
    for number in sorted(bodies):
        for i, line in enumerate(bodies[number].split("\n"), start=1):
            if line.strip() and (re.search(pattern, line) if regex else pattern in line):
                found.append((number, i))
    return found


# ── threads and secrets ──


def test_threads(xiyouji, api):
    basics = both(api, "threads/悬念-001", "thread", "xiyouji", "悬念-001")
    assert (basics["opened_chapter"], basics["last_activity_chapter"], basics["hang"], basics["overdue"]) == (
        56,
        58,
        42,
        True,
    )
    history = both(api, "threads/伏笔-001/history", "thread-history", "xiyouji", "伏笔-001")
    assert [e["chapter"] for e in history["entries"]] == [7, 8, 14]
    assert (
        both(api, "threads/伏笔-001/closing-plan", "thread-closing-plan", "xiyouji", "伏笔-001")
        == "第14章唐僧揭去六字真言。"
    )
    assert (
        both(api, "threads/悬念-001/description", "thread-description", "xiyouji", "悬念-001") == "两个行者，谁真谁假。"
    )
    overdue = both(api, "threads/overdue", "thread-overdue", "xiyouji")
    assert [(t["id"], t["hang"], t["threshold"]) for t in overdue["threads"]] == [
        ("感情线-001", 81, 20),
        ("悬念-001", 42, 10),
    ]
    assert [t["id"] for t in both(api, "threads", "thread-list", "xiyouji", "伏笔", type="伏笔")] == ["伏笔-001"]
    by_strength = both(api, "threads/by-strength", "thread-by-strength", "xiyouji", "高", strength="高")
    assert [(t["id"], t["status"], t["closed_chapter"]) for t in by_strength] == [("伏笔-001", "已收尾", 14)]


def test_secrets(xiyouji, api):
    basics = both(api, "secrets/信息差-001", "secret", "xiyouji", "信息差-001")
    assert basics["known_to"] == [{"name": "如来", "since": 56}, {"name": "孙悟空", "since": 58}]
    assert (
        both(api, "secrets/信息差-002/content", "secret-content", "xiyouji", "信息差-002")
        == "唐僧前世乃如来二徒金蝉子。"
    )
    unknown = both(api, "secrets/unknown", "secret-unknown", "xiyouji")
    assert [(s["id"], s["accumulated"], s["over_limit"]) for s in unknown["secrets"]] == [("信息差-002", 88, True)]


# ── outlines and chapters ──


def test_outlines_and_volumes(xiyouji, api):
    assert (
        both(api, "outline/section", "outline-section", "xiyouji", "主线", heading="主线")
        == "师徒四人西天取经，历九九八十一难。"
    )
    assert both(api, "outline/ending", "outline-ending", "xiyouji") == "五圣成真，径回东土。"
    assert both(api, "volumes/3/outline", "volume-outline", "xiyouji", "3").startswith("## 卷旨\n西天路上八十一难。")
    assert (
        both(api, "volumes/3/outline/section", "volume-outline-section", "xiyouji", "3", "收束", heading="收束")
        == "灵山见佛，五圣成真。"
    )
    volumes = both(api, "volumes", "volume-list", "xiyouji")
    assert [(v["number"], v["start_chapter"], v["end_chapter"], v["chapters"]) for v in volumes] == [
        (1, 1, 7, 7),
        (2, 8, 12, 5),
        (3, 13, 100, 88),
    ]


def test_chapters(xiyouji, api):
    meta = both(api, "chapters/1", "chapter", "xiyouji", "1")
    assert (meta["title"], meta["volume"], meta["perspective"]) == ("灵根育孕源流出 心性修持大道生", 1, "孙悟空")
    assert meta["word_count"] == sum(1 for ch in xiyouji[1] if not ch.isspace())
    assert both(api, "chapters/100/body", "chapter-body", "xiyouji", "100").rstrip("\n") == xiyouji[100].rstrip("\n")
    assert (
        both(api, "chapters/50/tail", "chapter-tail", "xiyouji", "50", "--chars", "300", chars=300)
        == xiyouji[50].rstrip()[-300:]
    )
    assert (
        both(api, "chapters/50/head", "chapter-head", "xiyouji", "50", "--chars", "300", chars=300)
        == xiyouji[50].lstrip()[:300]
    )
    assert both(api, "chapters/1/summary", "chapter-summary", "xiyouji", "1") == "石猴出世，拜为美猴王，出海学艺。"
    summaries = both(api, "chapters/summaries", "chapter-summaries", "xiyouji", "1", "3", start=1, end=3)
    assert [(s["number"], s["summary"]) for s in summaries] == [
        (1, "石猴出世，拜为美猴王，出海学艺。"),
        (2, ""),
        (3, ""),
    ]
    tails = both(api, "chapters/recent-tails", "chapter-recent-tails", "xiyouji")
    assert [(t["number"], t["tail"]) for t in tails] == [(n, xiyouji[n].rstrip()[-500:]) for n in (98, 99, 100)]
    listed = both(api, "chapters", "chapter-list", "xiyouji", "--position", "推进", position="推进")
    assert [(c["number"], c["volume"]) for c in listed] == [(1, 1), (58, 3)]


# ── timelines and settings ──


def test_timelines(xiyouji, api):
    current = both(api, "timeline/current", "timeline-current", "xiyouji")
    assert (current["volume"], [r["chapter"] for r in current["rows"]]) == (3, [98, 99, 100])
    recent = both(api, "timeline/recent", "timeline-recent", "xiyouji")
    assert [(b["volume"], len(b["rows"])) for b in recent] == [(2, 2), (3, 3)]
    first = both(api, "timeline/volumes/1", "timeline-volume", "xiyouji", "1")
    assert first["rows"][2]["present"] == ["美猴王", "龙王"]
    monkey = both(api, "timeline/character", "timeline-character", "xiyouji", "美猴王", name="美猴王")
    assert monkey["character"] == "孙悟空"
    # 石猴 / 悟空 / 美猴王 / 弼马温 / 齐天大圣 / 孙大圣 / 孙悟空; "行者孙悟空" (ch. 100) is not a name of his.
    assert [r["chapter"] for r in monkey["rows"]] == [1, 2, 3, 4, 5, 7, 98]


def test_settings(xiyouji, api):
    card = both(api, "characters/八戒", "character", "xiyouji", "八戒")
    assert (card["id"], card["name"], card["state"]) == ("zhubajie", "猪八戒", {"status": "成佛"})
    assert "天蓬元帅" in card["aliases"] and "呆子" not in card["aliases"]
    whole = both(api, "characters/唐僧/card", "character-card", "xiyouji", "唐僧")
    assert whole.startswith("---\nname: 唐僧\naliases:\n- 唐三藏\n") and whole.endswith("## 出处\n《西游记》人物唐僧。")
    section = both(api, "characters/玄奘/section", "character-section", "xiyouji", "玄奘", "出处", heading="出处")
    assert section == "《西游记》人物唐僧。"
    resolved = both(api, "aliases/resolve", "alias-resolve", "xiyouji", "齐天大圣", alias="齐天大圣")
    assert resolved == {"alias": "齐天大圣", "id": "sunwukong", "type": "角色", "canonical_name": "孙悟空"}
    ambiguous = api.get("/api/books/xiyouji/aliases/resolve", {"alias": "三太子"})
    assert ambiguous.status_code == 409
    assert sorted(c["canonical_name"] for c in ambiguous.json()["extra"]["candidates"]) == ["哪吒", "白龙马"]
    buddhas = both(api, "characters", "character-list", "xiyouji", "--status", "成佛", status="成佛")
    assert [c["name"] for c in buddhas] == ["白龙马", "沙僧", "孙悟空", "唐僧", "猪八戒"]
    assert len(both(api, "characters", "character-list", "xiyouji")) == 15
    assert both(api, "worldview/section", "worldview-section", "xiyouji", "天庭", heading="天庭") == "玉帝统御三界。"


# ── search ──


def test_keyword_search_matches_an_independent_scan(xiyouji, api):
    expected = lines_with(xiyouji, "美猴王")
    data = both(api, "search", "search", "xiyouji", "美猴王", "--limit", "500", q="美猴王", limit=500)
    assert data["total"] == len(expected) == 38
    assert [(h["chapter"], h["line"]) for h in data["hits"]] == expected
    short = both(api, "search", "search", "xiyouji", "悟空", q="悟空")
    assert short["total"] == len(lines_with(xiyouji, "悟空"))
    assert [(h["chapter"], h["line"]) for h in short["hits"]] == lines_with(xiyouji, "悟空")[:50]


def test_regex_search_matches_an_independent_scan(xiyouji, api):
    pattern = r"行者.{0,4}笑道"
    data = both(api, "search/regex", "search-regex", "xiyouji", pattern, "--limit", "500", pattern=pattern, limit=500)
    expected = lines_with(xiyouji, pattern, regex=True)
    assert data["total"] == len(expected) == 305
    assert [(h["chapter"], h["line"]) for h in data["hits"]] == expected[:500]


# ── reports ──


def test_reports(xiyouji, api):
    overdue = both(api, "reports/overdue", "report-overdue", "xiyouji")
    assert [(t["type"], t["count"]) for t in overdue["types"]] == [("伏笔", 0), ("悬念", 1), ("感情线", 1)]
    secrets = both(api, "reports/secrets", "report-secrets", "xiyouji")
    assert (secrets["threshold"], secrets["over_limit"]) == (50, ["信息差-002"])
    drift = both(api, "reports/style-drift", "report-style-drift", "xiyouji")
    assert (drift["baseline"]["chapters"], drift["current"]) == (10, {"start": 91, "end": 100, "chapters": 10})
    activity = both(api, "reports/thread-activity/2", "report-thread-activity", "xiyouji", "2")
    assert [(a["id"], a["chapters"]) for a in activity["advanced"]] == [("伏笔-001", [8])]
    assert activity["opened"] == [] and activity["closed"] == []
    hooks = both(api, "reports/weak-hooks", "report-weak-hooks", "xiyouji")
    assert (hooks["streak"], hooks["chapters"], hooks["reported"]) == (2, [99, 100], False)
    stats = both(api, "reports/stats", "report-stats", "xiyouji")
    assert (stats["chapters"], stats["volumes"], stats["characters"]) == (100, 3, 15)
    assert stats["characters_of_text"] == sum(sum(1 for ch in b if not ch.isspace()) for b in xiyouji.values())
    assert stats["threads"] == {"total": 3, "进行": 2, "已收尾": 1, "已放弃": 0}


def test_leak_scan_matches_an_independent_scan(xiyouji, api):
    data = both(api, "reports/leaks", "leak-scan", "xiyouji", "--limit", "2000", limit=2000)
    # 六耳猕猴 before chapter 58 (reader told in 58); 金蝉子 anywhere (the reader is never told).
    expected: dict[tuple[int, str], list[int]] = {}
    for c, n in lines_with(xiyouji, "六耳猕猴"):
        if c < 58:
            expected.setdefault((c, "信息差-001"), []).append(n)
    for c, n in lines_with(xiyouji, "金蝉子"):
        expected.setdefault((c, "信息差-002"), []).append(n)
    assert data["total"] == len(expected)
    assert [((x["chapter"], x["secret"]), x["lines"]) for x in data["leaks"]] == sorted(expected.items())
    assert all(x["reasons"] == ["reader_not_told"] for x in data["leaks"] if x["secret"] == "信息差-002")
