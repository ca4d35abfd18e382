import pytest
from django.test import override_settings

from kernel.exceptions import InvalidInput
from storysystem.profiles import route_profiles_get
from storysystem.routing import craft_vocabulary, genre_route
from storysystem.storydict import story_system_build
from storysystem.thesaurus import Concept, concept_rows, thesaurus_load
from tests.storysystem.routing_requests import (
    DEV,
    DEV2,
    DEV3,
    DEV4,
    DEV5,
    DEV6,
    DEV7,
    DEV8,
    DEV9,
    HELD_OUT,
    NEGATED_ONLY,
    NO_GENRE,
)
from tests.storysystem.routing_requests_blind import BLIND, BLIND_GENERIC
from tests.storysystem.routing_requests_blind2 import BLIND2, BLIND2_CRAFT
from tests.storysystem.routing_requests_craft import CRAFT_BLIND
from tests.storysystem.routing_requests_craft2 import CRAFT2, SHORT_GENRE

pytestmark = pytest.mark.django_db

PROFILE_EVIDENCE = [
    # our thesaurus: 废柴 is a name of the concept 退婚流 (which names the row's alias 退婚流), so
    # it counts double; 退了婚 is one of its words (three characters: 1.5 × 5)
    {
        "field": "题材词表",
        "term": "废柴",
        "match": "thesaurus",
        "concept": "退婚流",
        "row_field": "题材别名",
        "row_term": "退婚流",
        "score": 10.0,
    },
    {
        "field": "题材词表",
        "term": "退了婚",
        "match": "thesaurus",
        "concept": "退婚流",
        "row_field": "题材别名",
        "row_term": "退婚流",
        "score": 7.5,
    },
    {"field": "题材别名", "term": "废柴", "match": "profile", "score": 2.983},
]
GENERIC_REASON = "查询没有点名任何题材（名称、别名、默认查询词都未命中，也没有相近的写法）；题材画像最高分 1.84（规则怪谈）低于阈值 4"


def test_keyword_route_with_evidence():
    route = genre_route(query="玄幻退婚流")
    assert route["method"] == "keyword"
    assert route["genre"] == "玄幻退婚流" and route["canonical_genre"] == "玄幻"
    assert route["primary"]["code"] == "S-GR-001"
    # 3×5 (题材/流派) + 2×3 (别名 退婚流) + 1×2 (默认查询词 退婚) + 0.5×2 (canonical_genre 玄幻)
    assert route["primary"]["score"] == 24.0
    assert route["primary"]["evidence"] == [
        {"field": "题材/流派", "term": "玄幻退婚流", "match": "exact"},
        {"field": "题材别名", "term": "退婚流", "match": "exact"},
        {"field": "默认查询词", "term": "退婚", "match": "exact"},
        {"field": "canonical_genre", "term": "玄幻", "match": "exact"},
    ]
    assert route["base_tables"] == ["命名规则", "人设与关系", "金手指与设定"]
    assert route["dynamic_tables"] == ["桥段套路", "爽点与节奏", "场景写法"]
    assert route["default_query_terms"] == ["退婚", "打脸", "逆袭", "誓约"]
    assert route["required_payoffs"] == ["当众立誓", "首次反打", "约定之日兑现"]
    assert route["ruling"] is None  # the seed has no 裁决规则 table


def test_several_hits_rank_primary_and_candidates():
    route = genre_route(query="都市里觉醒异能的上门女婿")
    assert route["primary"]["code"] == "S-GR-004"
    assert route["primary"]["score"] == 9.0
    assert route["primary"]["evidence"] == [
        {"field": "题材别名", "term": "上门女婿", "match": "exact"},
        {"field": "canonical_genre", "term": "都市", "match": "exact"},
    ]
    assert [(c["code"], c["score"]) for c in route["candidates"]] == [("S-GR-003", 7.0)]
    assert route["candidates"][0]["evidence"] == [
        {"field": "默认查询词", "term": "异能", "match": "exact"},
        {"field": "默认查询词", "term": "觉醒", "match": "exact"},
        {"field": "默认查询词", "term": "都市", "match": "exact"},
        {"field": "canonical_genre", "term": "都市", "match": "exact"},
    ]


def test_explicit_genre_wins_over_the_query():
    route = genre_route(query="玄幻退婚流", genre="现言")
    assert (route["method"], route["primary"]["code"], route["genre"]) == ("explicit", "S-GR-005", "现言")
    assert route["primary"]["evidence"] == [{"field": "题材/流派", "term": "现言", "match": "explicit"}]
    # an explicit canonical genre with several rows: the query breaks the tie
    route = genre_route(query="守则上写着晚上别开门", genre="悬疑")
    assert route["primary"]["code"] == "S-GR-008"
    assert [c["code"] for c in route["candidates"]] == ["S-GR-007"]


def test_profile_route_when_no_genre_is_named():
    # no routing term occurs in the query: the genre profiles decide, with the words as evidence
    route = genre_route(query="废柴被退了婚")
    assert route["method"] == "profile"
    assert route["primary"]["code"] == "S-GR-001"
    assert route["primary"]["evidence"][:3] == PROFILE_EVIDENCE


def test_fuzzy_route_of_an_unknown_explicit_genre():
    route = genre_route(query="", genre="规则怪谈类")
    assert (route["method"], route["primary"]["code"]) == ("explicit", "S-GR-008")
    assert route["primary"]["evidence"] == [
        {"field": "题材/流派", "term": "规则怪谈", "match": "fuzzy", "similarity": 0.9667}
    ]


def test_generic_fallback():
    route = genre_route(query="随便写点什么")
    assert route == {
        "method": "generic",
        "reason": GENERIC_REASON,
        "genre": "通用",
        "canonical_genre": "通用",
        "primary": None,
        "candidates": [],
        "base_tables": ["命名规则", "人设与关系", "金手指与设定"],
        "dynamic_tables": ["桥段套路", "爽点与节奏", "场景写法"],
        "default_query_terms": [],
        "required_payoffs": [],
        "genre_filter": [],
        "weight": 1.0,
        "ruling": None,
    }
    unknown = genre_route(query="随便", genre="不存在的题材")
    assert (unknown["method"], unknown["genre"], unknown["genre_filter"], unknown["reason"]) == (
        "generic",
        "不存在的题材",
        ["不存在的题材"],
        "题材「不存在的题材」不在路由表中，也没有相近的题材；"
        "查询没有点名任何题材（名称、别名、默认查询词都未命中，也没有相近的写法）；题材画像最高分 1.64（规则怪谈）低于阈值 4",
    )


def test_base_tables_give_top_one_and_dynamic_tables_top_two():
    data = story_system_build(query="玄幻退婚流")
    # keyed by table, as the seed writes it (issue 31)
    assert {table: [i["code"] for i in items] for table, items in data["base_context"].items()} == {
        "命名规则": ["S-NR-001"],
        "人设与关系": ["S-CH-001"],
        "金手指与设定": ["S-SY-001"],
    }
    assert list(data["base_context"]) == data["route"]["base_tables"]
    assert [(i["table"], i["code"]) for i in data["dynamic_context"]] == [
        ("桥段套路", "S-TR-001"),
        ("桥段套路", "S-TR-002"),
        ("爽点与节奏", "S-PA-002"),
        ("场景写法", "S-SP-001"),
        ("场景写法", "S-SP-002"),
    ]
    tables = [t for t in data["source_trace"] if t["kind"] == "table"]
    assert [(t["table"], t["codes"], t["fallback"]) for t in tables] == [
        ("命名规则", ["S-NR-001"], False),
        ("人设与关系", ["S-CH-001"], False),
        ("金手指与设定", ["S-SY-001"], True),  # no shared term: first entry written for 玄幻
        ("桥段套路", ["S-TR-001", "S-TR-002"], False),
        ("爽点与节奏", ["S-PA-002"], False),
        ("场景写法", ["S-SP-001", "S-SP-002"], True),
    ]


def test_generic_build_uses_the_generic_tables():
    data = story_system_build(query="随便写点什么")
    assert data["route"]["method"] == "generic"
    assert data["master_constraints"] == {
        "核心调性": "",
        "节奏策略": "",
        "主冲突模板": "",
        "金手指硬限制": [],
        "主角硬约束": [],
        "全局毒点": [],
    }
    # every base table is a key; 金手指与设定 has no entry written for every genre, so it is empty
    assert {table: len(items) for table, items in data["base_context"].items()} == {
        "命名规则": 1,
        "人设与关系": 1,
        "金手指与设定": 0,
    }
    assert {i["table"] for i in data["dynamic_context"]} <= {"桥段套路", "爽点与节奏", "场景写法"}


def test_refcsv_routes(refcsv_only):
    route = genre_route(query="玄幻退婚流")
    assert (route["method"], route["primary"]["code"], route["primary"]["library"]) == ("keyword", "GR-001", "refcsv")
    assert genre_route(query="压抑一点，后面爆")["primary"]["code"] == "GR-003"
    profile = genre_route(query="克系的不可名之物")
    assert (profile["method"], profile["primary"]["code"]) == ("profile", "GR-018")
    assert genre_route(query="", genre="都市")["primary"]["code"] == "GR-004"
    data = story_system_build(query="玄幻退婚流")
    # the real routing table has no 主冲突模板 column: it is derived from the top 桥段 entry, and traced
    trace = [t for t in data["source_trace"] if t["kind"] == "constraint" and t["field"] == "主冲突模板"]
    assert trace == [{"kind": "constraint", "field": "主冲突模板", "source_code": "TR-001", "source_table": "桥段套路"}]
    assert data["master_constraints"]["主冲突模板"].startswith("退婚三年之约：当众羞辱、身份贬低、旧关系断裂 → ")


def test_refcsv_route_carries_the_genre_ruling_and_its_anti_patterns(refcsv_only):
    route = genre_route(query="都市里觉醒异能")
    assert route["primary"]["code"] == "GR-010"
    assert route["ruling"] == {
        "code": "RS-006",
        "table": "裁决规则",
        "library": "refcsv",
        "题材": "都市",
        "风格优先级": route["ruling"]["风格优先级"],
        "爽点优先级": route["ruling"]["爽点优先级"],
        "节奏默认策略": route["ruling"]["节奏默认策略"],
        "毒点权重": route["ruling"]["毒点权重"],
        "冲突裁决": "爽点与节奏 > 场景写法 > 桥段套路",
        "contract注入层": route["ruling"]["contract注入层"],
    }
    data = story_system_build(query="都市里觉醒异能")
    ruled = [(a["text"], a["field"]) for a in data["anti_patterns"] if a["source_code"] == "RS-006"]
    assert ruled == [("战力体系自相矛盾", "反模式"), ("升级无代价", "反模式"), ("打斗无策略", "反模式")]
    ruling = {"kind": "ruling", "code": "RS-006", "table": "裁决规则", "library": "refcsv", "score": 0.0}
    # the entry's 核心摘要 and 大模型指令, quoted as the seed's source trace does (issue 31)
    assert ruling | {"摘要": "都市高武裁决规则", "指令": "按冲突裁决排序命中条目"} in data["source_trace"]
    # several rulings for 都市 and nothing in the query names one: the first by 编号
    assert genre_route(query="x", genre="都市")["ruling"]["code"] == "RS-004"


def _accuracy(requests: list[tuple[str, str]]) -> tuple[int, list[tuple[str, str, str | None]]]:
    misses = []
    for query, expected in requests:
        route = genre_route(query=query)
        got = route["primary"]["code"] if route["primary"] else None
        if got != expected:
            misses.append((query, expected, got))
        else:
            assert route["primary"]["evidence"], query  # a routed request always shows why
    return len(requests) - len(misses), misses


def test_refcsv_everyday_requests_dev_sets(refcsv_only):
    # The sets the weights and the thesaurus were tuned on; docs/story-system.md §3 has each
    # set's figure the first time it was measured, before it was tuned on.
    sets = (DEV, DEV2, DEV3, DEV4, DEV5, DEV6, DEV7, DEV8, DEV9)
    results = [_accuracy(s) for s in sets]
    assert [(hits, len(s)) for (hits, _), s in zip(results, sets, strict=True)] == [
        (78, 78),
        (52, 52),
        (51, 52),
        (52, 52),
        (52, 52),
        (52, 52),
        (52, 52),
        (50, 52),
        (52, 52),
    ], [m for _, m in results]  # 491 / 494; 491 before the stretch-once rules too (DEV8 −1, DEV9 +1)


def test_refcsv_everyday_requests_held_out_set(refcsv_only):
    # Measured, never tuned on (but read: it sits beside the dev sets), see docs/story-system.md §3.
    hits, misses = _accuracy(HELD_OUT)
    # 69 before the craft signal: 把红楼梦里的人物拿出来写一段番外 was routed to 同人衍生 only by the
    # bigram 写一 of the thesaurus word 重写一遍; 人物、出来、一段、番外 are craft words, so it falls back.
    # 68 → 72 with the stretch-once rules (docs/story-system.md §3): 我死后重生… no longer counts 我死后
    # three times for 知乎短篇风, 位面改写 no longer meets 同人衍生 through 面改.
    assert (hits, len(HELD_OUT)) == (72, 78), misses


def test_refcsv_everyday_requests_blind_set(refcsv_only):
    # Written blind while the thesaurus was written; measured once, on the merged tree (issue 12 §10).
    hits, misses = _accuracy(BLIND)
    # 142 before the stretch-once rules (one gained, two lost: 谢邀…医院 and MOBA团战…写清楚)
    assert (hits, len(BLIND)) == (141, 156), misses  # 90.4 %: the ≥ 9 in 10 goal
    # Craft questions that name no genre fall back to generic: 3 of these 12 before the craft signal,
    # 10 with it (docs/story-system.md §3), all 12 since a craft question's lengths are no evidence
    # (三百字 / 两千字 had carried two into the short-story styles, which the thesaurus gives 三千字).
    for query in BLIND_GENERIC:
        route = genre_route(query=query)
        assert route["primary"] is None and route["reason"].startswith("查询没有点名任何题材"), query


def test_refcsv_craft_questions_blind_set(refcsv_only):
    # Written and committed before the craft signal was built, measured once (docs/story-system.md §3).
    fell_back = [q for q in CRAFT_BLIND if genre_route(query=q)["primary"] is None]
    # 11 of 24 before the craft signal, 16 with it, 19 with the stretch-once rules (a thesaurus phrase's
    # fragments — 戏里, 具人 — no longer carry a craft question into a genre), 22 with the length and
    # one-word rules (三千字, 三百字 … 抓住, 反转). Left: 啰嗦 (one library entry, for 快穿) and 第一人称
    # (an alias of 知乎短篇风 in the library itself, 第一人称短篇).
    assert (len(fell_back), len(CRAFT_BLIND)) == (22, 24)
    assert [q for q in CRAFT_BLIND if q not in fell_back] == [
        "心理描写写多了显得啰嗦，怎么取舍",
        "第一人称和第三人称各有什么好处",
    ]


def test_refcsv_everyday_requests_second_blind_set(refcsv_only):
    # Written from the rows' meaning and committed before the router was changed for issue 12 §10,
    # measured once before (119 / 130, craft 11 / 15) and once after the change, never tuned on.
    hits, misses = _accuracy(BLIND2)
    assert (hits, len(BLIND2)) == (121, 130), misses  # 93.1 %
    fell_back = [q for q in BLIND2_CRAFT if genre_route(query=q)["primary"] is None]
    assert (len(fell_back), len(BLIND2_CRAFT)) == (13, 15)  # 11 before the length and one-word rules
    for query in fell_back:
        assert genre_route(query=query)["reason"].startswith("查询没有点名任何题材"), query


def test_refcsv_third_held_out_set(refcsv_only):
    # Committed before the length and one-word rules, measured once before (CRAFT2 11 / 16 fall
    # back, SHORT_GENRE 16 / 17) and once after them, never tuned on (docs/story-system.md §3).
    fell_back = [q for q in CRAFT2 if genre_route(query=q)["primary"] is None]
    assert (len(fell_back), len(CRAFT2)) == (13, 16)
    for query in fell_back:
        assert genre_route(query=query)["reason"].startswith("查询没有点名任何题材"), query
    hits, misses = _accuracy(SHORT_GENRE)
    # the miss: 第一人称的虐文 → 知乎短篇风 (第一人称 outweighs the two-character alias 虐文)
    assert (hits, len(SHORT_GENRE)) == (16, 17), misses


def test_refcsv_a_craft_questions_length_is_no_genre(refcsv_only):
    # 三百字 is how long, not which genre: without it the profile's best is under the threshold
    route = genre_route(query="来一段雨夜的环境描写，三百字左右")
    assert (route["method"], route["primary"]) == ("generic", None)  # 小程序短篇风 before, through 百字
    assert route["reason"] == (
        "查询没有点名任何题材，是写法问题：「一段」0.98、「环境」0.97、「境描」0.99、「描写」0.95 是各题材通用的写法词"
        "（参考库里均匀分布于各题材，数字为分布均匀度），「三百字」是篇幅，不作为题材依据，"
        "除去它们后题材画像最高分 3.12（穿越流）低于阈值 4"
    )
    # a genre request keeps what its length says beside its premise
    assert genre_route(query="我用三千字讲完一个关于替身的故事")["primary"]["code"] == "GR-007"


def test_refcsv_one_two_character_word_left_in_a_craft_question_is_no_genre(refcsv_only):
    # more than half of the request is craft words, and what is left for 知乎短篇风 is one
    # two-character word (反转 and its characters)
    route = genre_route(query="怎么写反转才不显得突兀")
    assert (route["method"], route["primary"]) == ("generic", None)  # 知乎短篇风 before
    assert route["reason"].endswith("除去它们后题材画像（知乎短篇风）只凭其余部分的一个两字词「反转」，不足为据")
    stuck = genre_route(query="卡文了，怎么继续写下去")  # 同人衍生 before, through 续写 in 继续写下去
    assert stuck["primary"] is None and stuck["reason"].endswith("只凭其余部分的一个两字词「续写」，不足为据")
    # a craft word the row keeps through the thesaurus (释放) is its evidence, not craft: the request
    # is then half craft words, not more, and keeps its route
    assert genre_route(query="让读者跟着主角一起憋着，最后痛快地释放")["primary"]["code"] == "GR-003"
    # a phrase of three characters or more is no accident (压着打)
    beaten = genre_route(query="前面一直给主角使绊子、压着打，读者都在骂，我要的就是最后那一下爆出来的快感")
    assert beaten["primary"]["code"] == "GR-003"


def test_refcsv_a_stretch_of_the_request_is_evidence_once(refcsv_only):
    # 我死后 is one thesaurus word of 知乎短篇风: its bigrams 我死 / 死后 (which the profile holds
    # through the same word) add nothing more to that row, so 重生…落魄书生 (穿越流) now wins
    route = genre_route(query="我死后重生在大唐一个落魄书生身上")
    assert (route["method"], route["primary"]["code"], route["primary"]["score"]) == ("profile", "GR-009", 12.2382)
    zhihu = next(c for c in route["candidates"] if c["code"] == "GR-007")
    assert zhihu["score"] == 7.9408  # 17.85 when 我死后, 我死 and 死后 each counted
    assert [(e["term"], e["match"], e["score"]) for e in zhihu["evidence"][:2]] == [
        ("我死后", "thesaurus", 7.5),
        ("生", "profile", 0.124),
    ]
    # the library's own columns are another witness: 雷劫 of 场景写法.关键词 still counts beside
    # the thesaurus word 雷劫 for 传统修真
    fairy = genre_route(query="斗法雷劫")["primary"]
    assert fairy["code"] == "GR-011"
    assert {(e["term"], e["field"]) for e in fairy["evidence"]} >= {("雷劫", "题材词表")}


def test_refcsv_bigrams_across_a_word_boundary_are_no_evidence(refcsv_only):
    profiles = route_profiles_get()
    # 面改 (位面|改写) and 统派 (系统|派她) straddle words of the lexicon (位面, 系统)
    assert profiles.boundary_fragments("系统派她去各个位面改写悲惨角色的结局") == frozenset(
        {"个位", "惨角", "统派", "色的", "面改"}
    )
    assert {"位面", "系统"} <= profiles.lexicon and not {"面改", "统派"} & profiles.lexicon
    route = genre_route(query="系统派她去各个位面改写悲惨角色的结局")
    assert route["primary"]["code"] == "GR-025"  # 同人衍生 before, through 桥段套路's 面改
    assert "面改" not in {e["term"] for c in [route["primary"], *route["candidates"]] for e in c["evidence"]}


def test_refcsv_a_genre_name_marked_as_the_books_genre_counts_more(refcsv_only):
    # 学院文: the genre's name followed by 文 names the book's genre; 学院 alone is one word among others
    marked = genre_route(query="学院文，废柴逆袭拿下年级第一")
    assert marked["primary"]["code"] == "GR-019"
    assert marked["primary"]["evidence"][0] == {
        "field": "题材词表",
        "term": "学院",
        "match": "thesaurus",
        "concept": "学院流",
        "row_field": "题材/流派",
        "row_term": "学院流",
        "score": 20.0,
    }
    plain = genre_route(query="学院，废柴逆袭拿下年级第一")
    assert [(plain["primary"]["code"], plain["primary"]["score"])] + [
        (c["code"], c["score"]) for c in plain["candidates"][:1]
    ] == [("GR-001", 26.4558), ("GR-019", 25.6833)]


def test_refcsv_craft_question_falls_back_with_its_craft_words(refcsv_only):
    route = genre_route(query="怎么写一个人物的成长弧光")
    assert (route["method"], route["primary"]) == ("generic", None)
    assert route["reason"] == (
        "查询没有点名任何题材，是写法问题：「人物」0.97、「弧光」0.84 是各题材通用的写法词"
        "（参考库里均匀分布于各题材，数字为分布均匀度），除去它们后题材画像最高分 1.63（同人衍生）低于阈值 4"
    )
    # 传统修真 before the craft signal (打斗 is shared with its 斗法); now its profile stays under 4
    fight = genre_route(query="怎么写好打斗场面")
    assert fight["primary"] is None and fight["reason"].endswith("题材画像最高分 3.51（传统修真）低于阈值 4")
    words = craft_vocabulary().words
    # (evenness, entries): craft words spread over the genres, genre words held by one or two
    assert {t: (round(words[t][0], 2), words[t][1]) for t in ("描写", "反派", "伏笔", "族规", "供销")} == {
        "描写": (0.95, 17),
        "反派": (0.97, 26),
        "伏笔": (0.98, 22),
        "族规": (0.0, 5),
        "供销": (0.15, 5),
    }
    # the routing table's and the thesaurus's words are genre words, never craft words
    assert "退婚" not in words and "守则" not in words and "丹田" not in words
    # a genre request holding craft words keeps its route: its genre words are left
    assert genre_route(query="斗法场面想写得有来有回，飞剑、阵法、符箓全用上")["primary"]["code"] == "GR-011"
    # 释放 is a craft word, but the thesaurus gives it to 压抑后爆: there it still counts
    assert genre_route(query="让读者跟着主角一起憋着，最后痛快地释放")["primary"]["code"] == "GR-003"


def test_refcsv_request_naming_no_genre_falls_back_with_its_reason(refcsv_only):
    for query in NO_GENRE:
        route = genre_route(query=query)
        assert (route["method"], route["primary"]) == ("generic", None), query
        assert route["reason"].startswith("查询没有点名任何题材"), route["reason"]
    route = genre_route(query="随便写点什么")
    assert route["reason"].endswith("题材画像最高分 0.67（年代民国）低于阈值 4")


def test_refcsv_negated_words_are_no_evidence(refcsv_only):
    # 不要虐 asks for the opposite of 虐文: never routed there, and the fallback says why
    for query in NEGATED_ONLY:
        route = genre_route(query=query)
        assert (route["method"], route["primary"]) == ("generic", None), query
        assert route["reason"].startswith("查询只有否定的词（"), route["reason"]
    assert genre_route(query="不要虐")["reason"] == "查询只有否定的词（虐），没有点名任何题材"
    assert genre_route(query="别写成虐文")["reason"] == "查询只有否定的词（虐文），没有点名任何题材"
    # a premise's own negation is content, not a preference
    assert genre_route(query="家族里唯一不能修炼的少年被退了婚")["primary"]["code"] == "GR-001"
    sweet = genre_route(query="不要虐文，要甜一点的校园恋爱")
    assert sweet["primary"]["code"] == "GR-013"
    assert genre_route(query="一点都不虐的小甜文")["primary"]["code"] == "GR-013"
    # a cue inside a premise's own words is content: 不要回头 of a notice, 不对劲
    notice = genre_route(query="夜班须知第一条：不要回头")
    assert notice["primary"]["code"] == "GR-002"


def test_refcsv_thesaurus_route_carries_its_evidence(refcsv_only):
    route = genre_route(query="倒插门的女婿天天洗衣做饭被全家嫌弃")
    assert (route["method"], route["primary"]["code"]) == ("profile", "GR-004")
    words = [
        (e["term"], e["concept"], e["row_field"], e["row_term"])
        for e in route["primary"]["evidence"]
        if e["match"] == "thesaurus"
    ]
    assert words == [
        ("洗衣做饭", "赘婿", "题材别名", "上门女婿"),
        ("被全家嫌弃", "赘婿", "题材别名", "上门女婿"),
        ("倒插门", "赘婿", "题材别名", "上门女婿"),
        ("女婿", "赘婿", "题材别名", "上门女婿"),
    ]


def test_concepts_map_to_rows_by_their_names(refcsv_only):
    rows = route_profiles_get().rows

    def codes(names):
        return [(rows[i].code, col, term) for i, col, term in concept_rows(Concept(names=names, words=()), rows)]

    assert codes(("赘婿", "上门女婿")) == [("GR-004", "题材别名", "上门女婿")]  # an equal alias beats containment
    assert codes(("赘婿",)) == [("GR-004", "题材/流派", "都市赘婿流")]  # contained in the genre name
    assert codes(("修仙", "仙侠")) == [("GR-011", "题材别名", "修仙")]  # not 仙侠言情: the alias is equal
    assert codes(("悬疑",)) == [(c, "canonical_genre", "悬疑") for c in ("GR-002", "GR-014", "GR-018", "GR-020")]
    assert codes(("星际", "机甲")) == []  # the shared library has no such row: the concept is unused


def test_a_thesaurus_of_the_settings_is_used_and_a_broken_one_is_refused(refcsv_only, tmp_path):
    own = tmp_path / "词表.yaml"
    own.write_text("concepts:\n  - names: [宫斗]\n    words: [选秀入宫的答应]\n", encoding="utf-8")
    with override_settings(STORY_SYSTEM={"route_thesaurus": str(own)}):
        route = genre_route(query="选秀入宫的答应")
        assert route["primary"]["code"] == "GR-022"
        assert route["primary"]["evidence"][0]["term"] == "选秀入宫的答应"
    broken = tmp_path / "坏.yaml"
    broken.write_text("concepts:\n  - names: [宫斗\n    words: x\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as err:
        thesaurus_load(broken)
    assert err.value.message.startswith(f"题材词表 {broken} 第 ") and "不是合法的 YAML" in err.value.message
    shape = tmp_path / "形.yaml"
    shape.write_text("concepts:\n  - names: []\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"concepts\[0\] 需要 names"):
        thesaurus_load(shape)
