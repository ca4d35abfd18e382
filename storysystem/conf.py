"""Tunable knobs of the story system, overridable with ``STORY_SYSTEM = {...}`` in settings.

Every value here is a decision documented in docs/story-system.md.
"""

from typing import Any

from django.conf import settings

# The shared contract columns and the model field each is stored in.
CONTRACT_FIELDS: dict[str, str] = {
    "编号": "code",
    "适用技能": "skills",
    "分类": "category",
    "层级": "level",
    "关键词": "keywords",
    "意图与同义词": "intents",
    "适用题材": "genres",
    "大模型指令": "instruction",
    "核心摘要": "summary",
    "详细展开": "detail",
}

DEFAULTS: dict[str, Any] = {
    # Columns that hold anti-patterns, in any table (old and new designs). 反套路变种 is a creative
    # variant, never an anti-pattern, and is rejected here even if someone adds it.
    "anti_pattern_fields": ["毒点", "反面写法", "常见误区", "常见崩盘误区", "忌讳写法", "强制禁忌/毒点", "反模式"],
    # BM25F field weights: what the author *means* (intent) beats tags, tags beat prose.
    "field_weights": {
        "intents": 4.0,
        "keywords": 3.0,
        "summary": 2.0,
        "detail": 1.0,
        "instruction": 1.0,
        "category": 0.5,
        "extra": 0.5,
    },
    "bm25_k1": 1.2,
    "bm25_b": 0.75,
    # Routing: weight of a hit on each routing column (scaled by the matched term's length).
    # canonical_genre is our addition (weakest): "一本悬疑小说" should reach a 悬疑 route.
    "route_field_weights": {"题材/流派": 3.0, "题材别名": 2.0, "默认查询词": 1.0, "canonical_genre": 0.5},
    "fuzzy_threshold": 0.6,
    # Genre profiles (an everyday request that names no genre): BM25 over one document per routing
    # row, field weights of the row's own columns, then of the keyword columns of every entry of
    # the other tables written for the row's genre. Tuned on the dev set of
    # tests/storysystem/routing_requests.py only.
    "route_profile_weights": {
        "题材/流派": 3.0,
        "题材别名": 3.0,
        "关键词": 3.0,
        "默认查询词": 2.5,
        "意图与同义词": 2.0,
        "必选爽点": 1.5,
        "核心调性": 1.5,
        "节奏策略": 1.5,
        "毒点": 1.0,
        "核心摘要": 1.0,
        "详细展开": 1.0,
        "大模型指令": 1.0,
        # our thesaurus's words (storysystem/seed/题材词表.yaml), for the rows their concept maps to
        "题材词表": 2.0,
    },
    "route_profile_library_weights": {
        "关键词": 1.0,
        "意图与同义词": 0.8,
        "核心摘要": 0.3,
        "详细展开": 0.2,
        "大模型指令": 0.2,
    },
    "route_profile_unigrams": True,
    "route_profile_unigram_weight": 0.5,
    "route_profile_k1": 1.2,
    "route_profile_b": 0.75,
    # The genre thesaurus (our own everyday vocabulary per genre concept, storysystem/seed/题材词表.yaml
    # when empty) and the score a two-character word of it adds to the rows its concept maps to.
    "route_thesaurus": "",
    "route_thesaurus_weight": 5.0,
    # a concept's own name (快穿, 赘婿) is the genre itself: stronger than any of its words
    "route_thesaurus_name_boost": 2.0,
    # Accept the best profile only with this score, and this far ahead of the runner-up
    # ((best − second) / best): below either the request is too vague and falls back.
    "route_profile_min_score": 4.0,
    "route_profile_margin": 0.02,
    # Craft questions (对话怎么写得自然): a word of the library's technique columns is a craft word
    # when its entries spread evenly over the genres (normalized entropy of its per-genre rate at
    # least ``route_craft_evenness``) in at least ``route_craft_min_entries`` entries, and neither
    # the routing table nor the thesaurus uses it as a genre word. A request whose genre evidence
    # is gone once its craft words are set aside falls back to generic (docs/story-system.md §3).
    "route_craft_columns": [
        "分类",
        "关键词",
        "意图与同义词",
        "技法类型",
        "技法名称",
        "适用场景",
        "场景类型",
        "模式名称",
        "节奏类型",
        "情绪调动手法",
        "人设类型",
        "桥段名称",
        "设定类型",
        "命名对象",
        "核心摘要",
        "详细展开",
        "大模型指令",
    ],
    "route_craft_evenness": 0.8,
    "route_craft_min_entries": 3,
    "generic_base_tables": ["命名规则", "人设与关系", "金手指与设定"],
    "generic_dynamic_tables": ["桥段套路", "爽点与节奏", "场景写法"],
    "base_top_k": 1,
    "dynamic_top_k": 2,
    # Which setting fields a chapter may touch, and how (see override rules): ours, then seed 003
    # §10.4's. 全局毒点 stays append-only (a chapter adds prohibitions, never changes or removes the
    # master's: the guarantee the seed's "locked" gives), 全局禁区补充 is the seed's append-only twin.
    "override_policy": {
        "locked": [
            "核心调性",
            "主冲突模板",
            "金手指硬限制",
            "主角硬约束",
            "主路由题材",
            "主角底层人设",
            "世界规则闭环",
            # issue 31, as the seed says: the book's 全局毒点 and its long-line 节奏策略 are the master's. A
            # chapter adds anti-patterns of its own (add_anti_patterns) and sets 本章节奏目标; a --set of either
            # is refused with the reason, and a chapter query's route suggesting another value lands under
            # ignored_locked, never in the setting
            "全局毒点",
            "节奏策略",
        ],
        "append_only": ["命名语系", "长线伏笔", "长线关系提醒", "全局禁区补充"],
        "override_allowed": ["本章桥段", "本章场景", "本章节奏目标", "本章局部情绪侧重", "本章输出重点"],
    },
    # Where a master constraint is read from when the route row has no column of that name.
    "constraint_sources": {"金手指硬限制": [["金手指与设定", "数值控制边界"]]},
}

# The master constraints the library fills (each has a value, possibly empty, in every dict).
MASTER_FIELDS: tuple[str, ...] = ("核心调性", "节奏策略", "主冲突模板", "金手指硬限制", "主角硬约束", "全局毒点")
# Seed 003 §10.4's other fields: set by the author (``--set``), present in a dict only once given.
SEED_FIELDS: tuple[str, ...] = (
    "主路由题材",
    "主角底层人设",
    "世界规则闭环",
    "命名语系",
    "长线伏笔",
    "长线关系提醒",
    "全局禁区补充",
    "本章桥段",
    "本章场景",
    "本章节奏目标",
    "本章局部情绪侧重",
    "本章输出重点",
)
SETTING_FIELDS: tuple[str, ...] = (*MASTER_FIELDS, *SEED_FIELDS)
# List fields (``a|b`` on the command line): the hard rules and every append-only field.
LIST_FIELDS: frozenset[str] = frozenset(
    {"金手指硬限制", "主角硬约束", "全局毒点", "命名语系", "长线伏笔", "长线关系提醒", "全局禁区补充"}
)
NEVER_ANTI_PATTERN = "反套路变种"


def conf(name: str) -> Any:
    """The setting ``name`` from ``settings.STORY_SYSTEM`` or its default."""
    return getattr(settings, "STORY_SYSTEM", {}).get(name, DEFAULTS[name])


def anti_pattern_fields() -> list[str]:
    return [f for f in conf("anti_pattern_fields") if f != NEVER_ANTI_PATTERN]
