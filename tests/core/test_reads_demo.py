"""Every read interface on the demo book (examples/demo-book), with the exact values its README
promises, through the selectors, the ``story`` command and REST."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import Book
from tests.conftest import DEMO_BOOK

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    """The demo book, rebuilt once for the module (read-only tests), removed afterwards."""
    if not (DEMO_BOOK / "book.yaml").exists():
        pytest.skip(f"demo book absent: {DEMO_BOOK}")
    from bookfiles.rebuilder import book_rebuild

    with django_db_blocker.unblock():
        report = book_rebuild(root=DEMO_BOOK)
        assert report["ok"], report["errors"]
        yield Book.objects.get(slug="demo-book")
        Book.objects.filter(slug="demo-book").delete()


def story(*args: str):
    """Run ``story`` and return its JSON (or text) output."""
    out = StringIO()
    call_command("story", *args, stdout=out)
    text = out.getvalue()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text[:-1] if text.endswith("\n") else text


# ── threads ──


def test_thread_basics_hang_is_computed_from_last_advance(demo, api):
    expected = {
        "id": "悬念-001",
        "type": "悬念",
        "title": "禁地夜半剑鸣",
        "strength": "中",
        "status": "进行",
        "opened_chapter": 5,
        "planned_end": None,
        "planned_end_volume": None,
        "planned_end_written": None,
        "closed_chapter": None,
        "planned_end_chapter": None,
        "planned_end_note": "",
        "last_activity_chapter": 8,
        "current_chapter": 24,
        "hang": 16,
        "threshold": 10,
        "past_planned_end": False,
        "overdue": True,
        "overdue_reason": "已悬置 16 章（最后推进于第8章），超过阈值 10",
    }
    assert story("thread", "demo-book", "悬念-001") == expected
    assert api.get("/api/books/demo-book/threads/悬念-001").json() == expected


def test_closed_thread_does_not_hang(demo):
    data = story("thread", "demo-book", "伏笔-002")
    assert (data["status"], data["closed_chapter"], data["hang"], data["overdue"]) == ("已收尾", 14, None, False)


def test_thread_history_by_chapter(demo, api):
    data = story("thread-history", "demo-book", "伏笔-001")
    assert [e["chapter"] for e in data["entries"]] == [1, 3, 11, 20]
    assert data["entries"][1]["text"] == "老者自称“剑中残魂”，不肯道出名号。"
    assert api.get("/api/books/demo-book/threads/伏笔-001/history").json() == data


def test_thread_closing_plan_and_description(demo, api):
    plan = "第40章前后，于雾海剑阁揭示断剑折断的真相：三百年前青岚子以此剑封印幽冥殿主。"
    assert story("thread-closing-plan", "demo-book", "伏笔-001") == plan
    assert api.get("/api/books/demo-book/threads/伏笔-001/closing-plan").json() == plan
    assert story("thread-description", "demo-book", "伏笔-001") == "断剑“青岚”的来历，以及剑中老者的身份。"


def test_thread_overdue_list(demo, api):
    expected = {
        "current_chapter": 24,
        "threads": [
            {
                "id": "悬念-001",
                "type": "悬念",
                "title": "禁地夜半剑鸣",
                "strength": "中",
                "last_activity_chapter": 8,
                "hang": 16,
                "threshold": 10,
                "planned_end_chapter": None,
                "past_planned_end": False,
                "overdue_reason": "已悬置 16 章（最后推进于第8章），超过阈值 10",
                "over_by": 6,
            }
        ],
    }
    assert story("thread-overdue", "demo-book") == expected
    assert api.get("/api/books/demo-book/threads/overdue").json() == expected


def test_thread_list_by_type_and_status(demo, api):
    assert [t["id"] for t in story("thread-list", "demo-book", "伏笔")] == [
        "伏笔-001",
        "伏笔-002",
        "伏笔-003",
        "伏笔-004",
    ]
    open_ones = api.get("/api/books/demo-book/threads", {"type": "伏笔", "status": "进行"}).json()
    assert [t["id"] for t in open_ones] == ["伏笔-001", "伏笔-003", "伏笔-004"]
    assert [t["id"] for t in story("thread-list", "demo-book", "感情线", "--status", "已放弃")] == ["感情线-002"]


def test_thread_list_by_strength(demo, api):
    assert [t["id"] for t in story("thread-by-strength", "demo-book", "高")] == ["伏笔-001", "伏笔-003", "悬念-002"]
    rows = api.get("/api/books/demo-book/threads/by-strength", {"strength": "高", "status": "进行"}).json()
    assert [(t["id"], t["planned_end"]) for t in rows] == [("伏笔-001", 40), ("伏笔-003", 36)]


# ── secrets ──


def test_secret_basics(demo, api):
    expected = {
        "id": "信息差-001",
        "title": "剑老即开派祖师",
        "known_to": [{"name": "剑老", "since": 3}, {"name": "林风", "since": 20}],
        "reader_knows": True,
        "reader_told_chapter": 20,
        "registered_chapter": 3,
        "keywords": ["开派祖师", "青岚子"],
    }
    assert story("secret", "demo-book", "信息差-001") == expected
    assert api.get("/api/books/demo-book/secrets/信息差-001").json() == expected


def test_secret_content(demo, api):
    content = "剑中老者“剑老”正是三百年前青岚宗的开派祖师青岚子，以残魂寄身断剑。"
    assert story("secret-content", "demo-book", "信息差-001") == content
    assert api.get("/api/books/demo-book/secrets/信息差-001/content").json() == content


def test_secrets_the_reader_does_not_know(demo, api):
    data = story("secret-unknown", "demo-book")
    assert (data["current_chapter"], data["threshold"]) == (24, 15)
    assert [(s["id"], s["registered_chapter"], s["accumulated"], s["over_limit"]) for s in data["secrets"]] == [
        ("信息差-002", 6, 18, True),
        ("信息差-004", 16, 8, False),
    ]
    assert api.get("/api/books/demo-book/secrets/unknown").json() == data


# ── outlines ──


def test_outline_section_and_ending(demo, api):
    main = (
        "外门废材林风拾得寄居祖师残魂的断剑，从青岚宗一路问剑至雾海深处，揭开三百年前青岚子与幽冥殿主同归于尽的真相。"
    )
    assert story("outline-section", "demo-book", "主线") == main
    assert api.get("/api/books/demo-book/outline/section", {"heading": "主线"}).json() == main
    ending = "林风在雾海剑阁重铸青岚剑，以十三式完整剑意斩灭幽冥殿主；剑老残魂散去，青岚宗由林风接任。"
    assert story("outline-ending", "demo-book") == ending
    assert api.get("/api/books/demo-book/outline/ending").json() == ending


def test_volume_outline_whole_and_section(demo, api):
    whole = story("volume-outline", "demo-book", "1")
    assert whole.startswith("## 卷旨\n青岚初鸣：写林风从废材到初露锋芒")
    assert [line for line in whole.splitlines() if line.startswith("## ")] == ["## 卷旨", "## 主要事件", "## 收束"]
    assert api.get("/api/books/demo-book/volumes/1/outline").json() == whole
    section = "卷末众人立于雾海之边，节奏放缓，为下一卷蓄势。"
    assert story("volume-outline-section", "demo-book", "2", "收束") == section
    assert api.get("/api/books/demo-book/volumes/2/outline/section", {"heading": "收束"}).json() == section


def test_volume_list(demo, api):
    expected = [
        {"number": 1, "name": "青岚初鸣", "start_chapter": 1, "end_chapter": 12, "chapters": 12},
        {"number": 2, "name": "雾海问剑", "start_chapter": 13, "end_chapter": 24, "chapters": 12},
    ]
    assert story("volume-list", "demo-book") == expected
    assert api.get("/api/books/demo-book/volumes").json() == expected


# ── chapters ──


def test_chapter_front_matter(demo, api):
    expected = {
        "number": 22,
        "title": "白鹭玉佩",
        "volume": 2,
        "perspective": "苏师姐",
        "story_time": "青岚历三百二十年·冬",
        "chapter_position": "推进",
        "hook_type": "情感钩-弱",
        "mood_position": "转折",
        "summary": "云鹤真人告诉苏晚晴，她是十八年前白鹭洲陆家灭门夜抱回的陆家遗孤；林风陪她在崖边坐了一夜。",
        "key_chapter": True,
        "threads": {"opens": [], "advances": ["感情线-001"], "closes": []},
        "word_count": 412,
        "extra": {},
    }
    assert story("chapter", "demo-book", "22") == expected
    assert api.get("/api/books/demo-book/chapters/22").json() == expected


def test_chapter_body_head_tail(demo, api):
    body = story("chapter-body", "demo-book", "1")
    assert body.startswith("青岚山的雨下了整整三天。")
    assert "---" not in body.splitlines()[0]
    # The CLI prints text with one trailing newline; the body itself ends with one.
    assert api.get("/api/books/demo-book/chapters/1/body").json().rstrip("\n") == body.rstrip("\n")
    assert story("chapter-head", "demo-book", "1", "--chars", "20") == "青岚山的雨下了整整三天。\n\n林风裹着一件"
    assert story("chapter-tail", "demo-book", "24", "--chars", "20") == "进去。”\n\n海上起了风，雾却一动也没动。"
    assert (
        api.get("/api/books/demo-book/chapters/24/tail", {"chars": 20}).json()
        == "进去。”\n\n海上起了风，雾却一动也没动。"
    )


def test_chapter_summary_and_range(demo, api):
    first = "外门杂役林风雨夜到后山寻药，拾得一截锈剑，剑中竟有老者开口说话。"
    assert story("chapter-summary", "demo-book", "1") == first
    rows = story("chapter-summaries", "demo-book", "1", "3")
    assert [r["number"] for r in rows] == [1, 2, 3]
    assert rows[0] == {"number": 1, "title": "山门夜雨", "summary": first}
    assert api.get("/api/books/demo-book/chapters/summaries", {"start": 1, "end": 3}).json() == rows


def test_recent_tails_of_previous_chapters(demo, api):
    rows = story("chapter-recent-tails", "demo-book", "--count", "2", "--chars", "30")
    assert rows == [
        {"number": 23, "title": "启程", "tail": "\n山下的路很长，一直通向东边。东边的天际，压着一线淡淡的白。"},
        {"number": 24, "title": "雾海之边", "tail": "轻地说：“明天，我们进去。”\n\n海上起了风，雾却一动也没动。"},
    ]
    before = api.get("/api/books/demo-book/chapters/recent-tails", {"before": 24, "count": 3, "chars": 10}).json()
    assert [r["number"] for r in before] == [21, 22, 23]
    assert all(len(r["tail"]) == 10 for r in before)


def test_chapter_list_by_position(demo, api):
    expected = [
        {"number": n, "title": t, "volume": 2, "chapter_position": "过渡"}
        for n, t in ((14, "守墓人"), (18, "黑令再现"), (21, "雾海之声"), (23, "启程"))
    ]
    assert story("chapter-list", "demo-book", "--position", "过渡", "--volume", "2") == expected
    assert api.get("/api/books/demo-book/chapters", {"position": "过渡", "volume": 2}).json() == expected


# ── timeline ──


def test_timeline_current_and_recent(demo, api):
    current = story("timeline-current", "demo-book")
    assert current["volume"] == 2
    assert [r["chapter"] for r in current["rows"]] == list(range(13, 25))
    assert current["rows"][0] == {
        "chapter": 13,
        "story_time": "青岚历三百二十年·秋",
        "event": "受封剑子",
        "present": ["青岚剑子", "宗主", "苏晚晴", "沈墨"],
    }
    recent = api.get("/api/books/demo-book/timeline/recent").json()
    assert [block["volume"] for block in recent] == [1, 2]
    assert recent[1] == current


def test_timeline_of_a_volume(demo, api):
    data = story("timeline-volume", "demo-book", "1")
    assert [r["chapter"] for r in data["rows"]] == list(range(1, 13))
    assert data["rows"][1]["present"] == ["林小子", "王伯"]
    assert api.get("/api/books/demo-book/timeline/volumes/1").json() == data


def test_timeline_by_character_matches_aliases(demo, api):
    data = story("timeline-character", "demo-book", "苏师姐")
    assert data["character"] == "苏晚晴"
    assert data["names"] == ["晚晴", "苏师姐", "苏晚晴"]
    assert [r["chapter"] for r in data["rows"]] == [6, 10, 13, 17, 22, 23, 24]
    assert data["rows"][1]["present"] == ["林师弟", "晚晴"]
    assert api.get("/api/books/demo-book/timeline/character", {"name": "苏师姐"}).json() == data
    in_volume_1 = story("timeline-character", "demo-book", "林风", "--volume", "1")
    assert in_volume_1["rows"][1]["present"] == ["林小子", "王伯"]


# ── settings ──


def test_character_by_alias_answers_the_current_state(demo, api):
    # The full answer (as_of, changed_in, a roster character) is tested in tests/entities/test_characters.py.
    data = story("character", "demo-book", "林风")
    assert (data["id"], data["as_of"], data["state"]["realm"], data["state"]["location"]) == (
        "linfeng",
        24,
        "筑基初期",
        "雾海",
    )
    assert api.get("/api/books/demo-book/characters/小风").json() == data


def test_character_card_and_section(demo, api):
    card = story("character-card", "demo-book", "苏晚晴")
    assert card.startswith("---\nname: 苏晚晴\naliases:\n- 苏师姐\n- 晚晴\ntier: 重要\n")
    assert card.endswith("## 性格\n外冷内热，待人有分寸，护短；对自己的身世讳莫如深。")
    assert api.get("/api/books/demo-book/characters/苏晚晴/card").json() == card
    looks = "十六七岁，身量清瘦，常穿洗得发白的外门灰衣，眉目间有山里孩子的倔强。"
    assert story("character-section", "demo-book", "小风", "外貌") == looks
    assert api.get("/api/books/demo-book/characters/小风/section", {"heading": "外貌"}).json() == looks


def test_alias_resolution(demo, api):
    expected = {"alias": "白鹭", "id": "lubailu", "type": "角色", "canonical_name": "陆白鹭"}
    assert story("alias-resolve", "demo-book", "白鹭", "--type", "角色") == expected
    assert api.get("/api/books/demo-book/aliases/resolve", {"alias": "白鹭", "type": "角色"}).json() == expected
    place = api.get("/api/books/demo-book/aliases/resolve", {"alias": "白鹭", "type": "地点"}).json()
    assert place["canonical_name"] == "白鹭洲"
    assert story("alias-resolve", "demo-book", "青岚剑子", "--chapter", "13")["canonical_name"] == "林风"


def test_alias_ambiguous_is_409_with_candidates(demo, api):
    resp = api.get("/api/books/demo-book/aliases/resolve", {"alias": "白鹭"})
    assert resp.status_code == 409
    body = resp.json()
    assert "白鹭" in body["message"]
    assert [(c["id"], c["canonical_name"]) for c in body["extra"]["candidates"]] == [
        ("loc_bailuzhou", "白鹭洲"),
        ("lubailu", "陆白鹭"),
    ]
    with pytest.raises(CommandError, match="别名歧义"):
        story("alias-resolve", "demo-book", "白鹭")


def test_alias_outside_its_window_is_404(demo, api):
    resp = api.get("/api/books/demo-book/aliases/resolve", {"alias": "青岚剑子", "chapter": 12})
    assert resp.status_code == 404
    assert "青岚剑子" in resp.json()["message"]


def test_character_list(demo, api):
    rows = story("character-list", "demo-book")
    assert [(r["id"], r["status"]) for r in rows] == [
        ("jianlao", "残魂"),
        ("linfeng", "存活"),
        ("lubailu", "存活"),
        ("shenmo", "存活"),
        ("suwanqing", "存活"),
        ("wangbo", None),
        ("yunhezhenren", "存活"),
        ("zhaoqian", "伏诛"),  # set by the <entity-update> tag of chapter 19
        ("zhouhu", None),  # declared by the <entity> tag of chapter 4
    ]
    assert rows[1] == {
        "id": "linfeng",
        "name": "林风",
        "tier": "核心",
        "status": "存活",
        "location": "雾海",
        "protagonist": True,
    }
    alive = api.get("/api/books/demo-book/characters", {"status": "存活"}).json()
    assert [r["id"] for r in alive] == ["linfeng", "lubailu", "shenmo", "suwanqing", "yunhezhenren"]


def test_worldview_section(demo, api):
    realm = "炼气（九层）→ 筑基（初、中、后期）→ 金丹 → 元婴 → 化神。外门弟子多在炼气，内门须筑基。"
    assert story("worldview-section", "demo-book", "境界") == realm
    assert api.get("/api/books/demo-book/worldview/section", {"heading": "境界"}).json() == realm
    sect = story("worldview-section", "demo-book", "宗门")
    assert "###" in sect  # a deeper heading stays inside its ## section


# ── search ──


def test_keyword_search(demo, api):
    data = story("search", "demo-book", "青岚子")
    assert data["total"] == 4
    assert [(h["chapter"], h["line"]) for h in data["hits"]] == [(7, 7), (20, 9), (20, 19), (20, 21)]
    assert data["hits"][2]["context"] == "林风怔怔地望着他：“你……你就是青岚子？”"
    assert api.get("/api/books/demo-book/search", {"q": "青岚子"}).json() == data
    assert [h["chapter"] for h in story("search", "demo-book", "开派祖师")["hits"]] == [20]
    assert story("search", "demo-book", "陆家遗孤")["hits"][0]["chapter"] == 22
    assert story("search", "demo-book", "幽冥令")["total"] == 0


def test_short_keyword_search_uses_the_scan(demo):
    data = story("search", "demo-book", "林", "--limit", "3")
    assert data["total"] == 105
    assert [(h["chapter"], h["line"]) for h in data["hits"]] == [(1, 3), (1, 5), (1, 11)]


def test_regex_search(demo, api):
    data = story("search-regex", "demo-book", "剑老.{0,2}笑")
    assert data["total"] == 2
    assert [(h["chapter"], h["line"]) for h in data["hits"]] == [(11, 25), (20, 21)]
    assert api.get("/api/books/demo-book/search/regex", {"pattern": "剑老.{0,2}笑"}).json() == data


# ── reports ──


def test_report_overdue_grouped_by_type(demo, api):
    data = story("report-overdue", "demo-book")
    assert data["total"] == 1
    assert [(t["type"], t["threshold"], t["count"]) for t in data["types"]] == [
        ("伏笔", 30, 0),
        ("悬念", 10, 1),
        ("感情线", 20, 0),
    ]
    assert data["types"][1]["threads"][0]["id"] == "悬念-001"
    assert api.get("/api/books/demo-book/reports/overdue").json() == data


def test_report_secret_accumulation(demo, api):
    data = story("report-secrets", "demo-book")
    assert (data["unknown"], data["over_limit"]) == (2, ["信息差-002"])
    assert [s["accumulated"] for s in data["secrets"]] == [18, 8]
    assert api.get("/api/books/demo-book/reports/secrets").json() == data


def test_report_style_drift(demo, api):
    data = story("report-style-drift", "demo-book")
    assert data["baseline"] == {"start": 1, "end": 10, "chapters": 10}
    assert data["current"] == {"start": 15, "end": 24, "chapters": 10}
    names = [f["feature"] for f in data["features"]]
    assert names[:4] == ["avg_sentence_length", "avg_paragraph_length", "dialogue_ratio", "cjk_ratio"]
    dialogue = data["features"][2]
    assert (dialogue["baseline"], dialogue["current"], dialogue["drifted"]) == (0.2794, 0.2396, False)
    assert api.get("/api/books/demo-book/reports/style-drift").json() == data
    assert story("report-style-drift", "demo-book", "--last", "5")["current"] == {"start": 20, "end": 24, "chapters": 5}


def test_report_thread_activity(demo, api):
    data = story("report-thread-activity", "demo-book", "2")
    assert (data["start_chapter"], data["end_chapter"]) == (13, 24)
    assert [(o["id"], o["chapters"]) for o in data["opened"]] == [("悬念-003", [21]), ("感情线-003", [15])]
    advanced = {a["id"]: a["chapters"] for a in data["advanced"]}
    assert advanced["伏笔-003"] == [16, 23]
    assert advanced["悬念-002"] == [15, 19]
    assert "悬念-001" not in advanced
    assert [c["id"] for c in data["closed"]] == ["伏笔-002", "悬念-002"]
    assert api.get("/api/books/demo-book/reports/thread-activity/2").json() == data


def test_report_weak_hook_streak(demo, api):
    expected = {"current_chapter": 24, "threshold": 3, "streak": 3, "chapters": [22, 23, 24], "reported": True}
    assert story("report-weak-hooks", "demo-book") == expected
    assert api.get("/api/books/demo-book/reports/weak-hooks").json() == expected


def test_report_book_stats(demo, api):
    data = story("report-stats", "demo-book")
    assert data == {
        "title": "青岚剑录",
        "current_chapter": 24,
        "chapters": 24,
        "volumes": 2,
        "characters_of_text": 9743,
        "average_chapter_length": 406,
        "threads": {"total": 10, "进行": 7, "已收尾": 2, "已放弃": 1},
        "secrets": {"total": 4, "reader_unknown": 2},
        # the 22 entities of the files + 周虎 (an <entity> tag in chapter 4)
        "characters": 9,
        "entities": {"角色": 9, "地点": 4, "物品": 3, "势力": 3, "招式": 4},
        "timeline_rows": 24,
    }
    assert api.get("/api/books/demo-book/reports/stats").json() == data


def test_leak_scan_finds_the_deliberate_leak(demo, api):
    expected = {
        "secrets_scanned": 4,
        "total": 1,
        "leaks": [
            {
                "secret": "信息差-001",
                "chapter": 7,
                "perspective": "林风",
                "reasons": ["reader_not_told", "pov_unaware"],
                "keywords": ["青岚子"],
                "lines": [7],
                "context": "“三百二十年前，有个剑修叫青岚子，一个人一把剑，从雾海那边杀回来，在这山上插剑立派。”王伯眯着眼，像在看很远的地方，“后来他又进了雾海，就再也没出来。有人说他死了，有人说他成仙了。”",
            }
        ],
    }
    assert story("leak-scan", "demo-book") == expected
    assert api.get("/api/books/demo-book/reports/leaks").json() == expected
    assert story("leak-scan", "demo-book", "--secret", "信息差-003") == {"secrets_scanned": 1, "total": 0, "leaks": []}


def test_timelines_render_the_markdown_table_of_the_book_s_file(demo, api):
    # issue 31: the seed's form, `--format text` (REST: ?format=text, text/markdown)
    text = story("timeline-volume", "demo-book", "1", "--format", "text")
    lines = text.split("\n")
    assert lines[:5] == [
        "## 第1卷",
        "",
        "| 章 | 书内时间 | 事件 | 在场人物 |",
        "|---|---|---|---|",
        "| 1 | 青岚历三百二十年·春 | 雨夜拾剑 | 林风、剑老 |",
    ]
    assert len([line for line in lines if line.startswith("| ")]) == 13  # the head and 12 chapters
    rest = api.get("/api/books/demo-book/timeline/volumes/1", {"format": "text"})
    assert (rest["content-type"], rest.content.decode().strip()) == ("text/markdown; charset=utf-8", text.strip())
    recent = story("timeline-recent", "demo-book", "--format", "text")
    assert recent.startswith("## 第1卷\n") and "\n\n## 第2卷\n" in recent
    current = story("timeline-current", "demo-book", "--format", "text")
    assert current.startswith("## 第2卷\n") and recent.endswith("\n\n" + current)
    mine = story("timeline-character", "demo-book", "苏师姐", "--format", "text").split("\n")
    assert mine[0] == "## 苏晚晴 在场的时间线"
    assert mine[2] == "| 卷 | 章 | 书内时间 | 事件 | 在场人物 |"
    assert len([line for line in mine if line.startswith("| ")]) == 1 + 7


def test_a_volume_s_first_chapter_is_key_without_a_mark(demo, api):
    # issue 31: the seed's is_key_chapter infers a volume's opening; the marked ones stay key
    assert story("chapter", "demo-book", "13")["key_chapter"] is True  # 雾海问剑 starts at 13, unmarked
    assert story("chapter", "demo-book", "1")["key_chapter"] is True
    assert story("chapter", "demo-book", "11")["key_chapter"] is True  # marked
    assert story("chapter", "demo-book", "14")["key_chapter"] is False
    assert api.get("/api/books/demo-book/chapters/13").json()["key_chapter"] is True


def test_planned_end_written_says_what_the_author_wrote(demo, api):
    # issue 31: 伏笔-001 has planned_end: 40; a volume plan reads 第N卷 in the same field
    assert story("thread", "demo-book", "伏笔-001")["planned_end_written"] == "第40章"
    assert api.get("/api/books/demo-book/threads/伏笔-001").json()["planned_end_written"] == "第40章"
