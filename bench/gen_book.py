"""Deterministic synthetic book generator for the benchmarks (format: docs/book-format.md).

    python bench/gen_book.py /tmp/book3000 --chapters 3000 [--seed 1] [--entities E] [--aliases A]
        [--threads T] [--secrets K] [--chars-per-chapter 3000]

Everything comes from one ``random.Random(seed)``: the same arguments always give byte-identical
files (no set iteration, no clock, no hash order). The text is nonsense, but nonsense shaped like a
仙侠 web novel: sentences from a fixed vocabulary with entity names and aliases mixed in (so mention
scans find something), dialogue in “”, full-width punctuation, and front matter whose thread refs,
履历 evidence chapters and volume ranges are all consistent, so a rebuild reports no warnings.

``.gen_book.json`` (a dot file: never read by the rebuilder) records the arguments, so
``chapter_append`` can later write chapter N+1 in the same style with the same cast.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CHAPTERS_PER_VOLUME = 100
PARAMS_FILE = ".gen_book.json"

# --- vocabulary -----------------------------------------------------------------------------------

SURNAMES = list(
    "林萧叶秦苏楚陆沈顾韩唐柳白江云方宁燕凌慕杨李王张赵孙周吴郑冯陈褚卫蒋许何吕施孔曹严华金魏陶姜谢邹"
    "窦章苗凤鲁韦昌马花任袁傅齐康伍余元卜平黄穆萧尹姚邵汪祁毛狄米贝明臧计成戴宋庞熊纪舒屈项祝董梁杜阮"
) + ["上官", "欧阳", "慕容", "司马", "东方", "南宫", "独孤", "公孙", "令狐", "轩辕"]
GIVEN = list(
    "风云天羽辰逸尘寒霜雪月星河山川岚青墨玄灵清瑶琳婉嫣凝烟若兮浩然轩宇泽阳明远航飞鸿鹏龙虎鹤凤麟松柏竹"
    "梅兰菊莲桐枫柳瑾瑜琪璇珊霖雨露晴晨曦昭煜炎焱烈锋锐刚毅勇志诚信义仁德礼智慧敏捷秋冬春夏易衡朗澈"
)
TITLES = ["师兄", "师姐", "师弟", "师妹", "长老", "公子", "姑娘", "前辈", "少主", "师叔", "掌柜", "大哥", "二哥"]
EPITHET_HEAD = list("青赤白黑金银铁血玉碧紫苍幽冷狂醉笑鬼神天地玄烈寒霜雷火风云")
EPITHET_BODY = list("面臂眼手发衫剑刀指袍心骨翼鳞爪")
EPITHET_TAIL = [
    "狼",
    "虎",
    "鹰",
    "蛟",
    "狐",
    "猿",
    "蝎",
    "仙子",
    "魔君",
    "真人",
    "散人",
    "剑客",
    "书生",
    "老怪",
    "童子",
    "居士",
]
PLACE_HEAD = list("青落天玄紫赤白苍幽碧云雾寒烈金铁灵龙凤星月日雷风霜雪古黑")
PLACE_MID = list("岚霞元霄阳云雾水石松竹枫河泉峡谷崖林原沙雪月星烟岩湖")
PLACE_TAIL = list("山城谷峰镇洞湖岭海原关寺宫岛林渊村崖")
FACTION_TAIL = ["宗", "门", "阁", "派", "帮", "盟", "殿", "家", "教", "楼", "府", "会"]
ITEM_TAIL = ["剑", "刀", "鼎", "珠", "镜", "符", "丹", "塔", "印", "铃", "扇", "戟", "弓", "琴", "玉佩", "令牌", "葫芦"]
SKILL_TAIL = ["掌", "拳", "剑法", "刀诀", "心诀", "指", "步", "神功", "真经", "秘术", "神通", "十三式", "九变"]
REALMS = ["炼气一层", "炼气三层", "炼气七层", "筑基初期", "筑基后期", "金丹初期", "金丹大成", "元婴", "化神", "渡劫"]

VERBS = [
    "缓缓抬头",
    "冷冷一笑",
    "沉默片刻",
    "握紧拳头",
    "深吸一口气",
    "眉头微皱",
    "目光一凝",
    "转身离去",
    "拱手行礼",
    "负手而立",
    "轻轻叹息",
    "猛然起身",
    "退后半步",
    "侧耳倾听",
    "闭目调息",
    "拔剑出鞘",
    "掐诀念咒",
    "纵身一跃",
    "按住剑柄",
    "低声说道",
    "点了点头",
    "摇了摇头",
    "望向远方",
    "心中一动",
    "脸色一变",
    "嘴角微扬",
]
SCENERY = [
    "夜色如墨，山风呼啸",
    "雨丝斜织，檐下灯火摇曳",
    "晨雾未散，远山如黛",
    "残阳似血，映红了半边天",
    "月华如水，洒落在青石阶上",
    "林间寂静，只闻虫鸣",
    "雷声隐隐，乌云压城",
    "雪落无声，天地一片苍茫",
    "溪水潺潺，竹影婆娑",
    "长街冷清，只有几盏孤灯",
    "峰顶云海翻涌，气象万千",
    "洞中阴冷，石壁上水珠滴落",
]
IDIOMS = [
    "不动声色",
    "心急如焚",
    "若有所思",
    "面不改色",
    "气定神闲",
    "神色凝重",
    "怒不可遏",
    "喜出望外",
    "将信将疑",
    "如释重负",
    "暗自心惊",
    "不以为然",
    "胸有成竹",
    "进退两难",
    "风驰电掣",
    "势如破竹",
    "悄无声息",
    "惊心动魄",
]
CONNECTORS = ["随即", "片刻之后", "就在此时", "与此同时", "不多时", "忽然", "紧接着", "良久", "话音未落", "然而"]
THINGS = [
    "那道剑光",
    "一缕黑气",
    "半块残玉",
    "石门上的古纹",
    "远处的钟声",
    "脚下的阵纹",
    "袖中的书信",
    "掌心的灼痛",
    "灵力的波动",
    "那股威压",
    "檐角的铜铃",
    "一封密函",
    "丹田中的真元",
    "血迹斑斑的衣角",
]
FEELINGS = ["心中警惕大起", "隐隐觉得不对", "却并不慌乱", "只觉浑身发冷", "胸中豪气顿生", "心头涌起一阵酸楚"]
SPEECH = [
    "此事另有蹊跷",
    "你究竟是什么人",
    "三日之后，我自会给你一个交代",
    "这笔账迟早要算",
    "别怕，有我在",
    "宗门大比在即，不可分心",
    "那东西绝不能落在他们手里",
    "你若再往前一步，休怪我无情",
    "我只问一句",
    "走，趁天亮之前离开这里",
    "原来如此",
    "此地不宜久留",
    "他们已经追来了",
    "这一剑，我替师父还你",
    "你可知道这意味着什么",
    "今日之事，不许外传",
    "我答应过她",
    "果然是你",
]
SPEECH_END = ["。", "！", "？", "……"]
SAY = ["道", "说道", "沉声道", "低声道", "冷笑道", "苦笑道", "喝道", "轻声道", "问道", "淡淡道"]
TITLE_HEAD = ["夜", "雨", "风", "血", "剑", "雪", "月", "火", "雷", "梦", "心", "影", "霜", "云", "星", "潮"]
TITLE_TAIL = [
    "中来客",
    "下惊变",
    "里藏锋",
    "断归途",
    "照孤城",
    "起微澜",
    "问前尘",
    "锁重楼",
    "燃旧誓",
    "照人心",
    "破长空",
    "落寒江",
    "渡残生",
    "满青衫",
    "沉古井",
    "隐杀机",
]
POSITIONS = (["推进"] * 6) + (["过渡"] * 3) + ["日常"]
MOODS = ["压抑", "铺垫", "铺垫", "小爽", "小爽", "大爽", "转折"]
HOOK_KINDS = ["危机钩", "悬念钩", "情感钩", "反转钩", "期待钩"]
HOOK_STRENGTHS = ["强", "强", "中", "中", "弱"]
SEASONS = ["春", "夏", "秋", "冬"]
THREAD_TYPES = [("伏笔", 0.45), ("悬念", 0.35), ("感情线", 0.20)]
THREAD_TITLE_TAIL = {
    "伏笔": ["之谜", "的来历", "的下落", "背后的人", "上的裂痕", "的真正用途"],
    "悬念": ["能否脱困", "生死未卜", "的真实身份", "为何失约", "的赌约", "的去向"],
    "感情线": ["与{other}", "的心事", "与{other}的旧约", "与{other}的误会"],
}
CHINESE_DIGITS = "〇一二三四五六七八九"


def chinese_number(n: int) -> str:
    """A simple 0–9999 Chinese numeral (三百二十), enough for in-book years."""
    if n == 0:
        return "〇"
    units = [(1000, "千"), (100, "百"), (10, "十"), (1, "")]
    out, zero = [], False
    for value, unit in units:
        digit = n // value % 10
        if digit:
            if zero and out:
                out.append("零")
            out.append(("" if (value == 10 and digit == 1 and not out) else CHINESE_DIGITS[digit]) + unit)
            zero = False
        else:
            zero = bool(out)
    return "".join(out)


# --- the cast -------------------------------------------------------------------------------------


@dataclass(eq=False)
class Entity:
    type: str
    name: str
    tier: str
    intro: int  # first chapter it may appear in
    aliases: list[dict] = field(default_factory=list)  # {"alias": str, "from": int | None}
    card: bool = False

    def names_at(self, chapter: int) -> list[str]:
        return [self.name] + [a["alias"] for a in self.aliases if (a.get("from") or 0) <= chapter]


@dataclass(frozen=True)
class Params:
    chapters: int
    seed: int = 1
    entities: int | None = None
    aliases: int | None = None
    threads: int | None = None
    secrets: int | None = None
    chars_per_chapter: int = 3000

    def resolved(self) -> Params:
        n = self.chapters
        entities = self.entities if self.entities is not None else max(20, n // 3)
        aliases = self.aliases if self.aliases is not None else max(20, round(n * 2 / 3))
        threads = self.threads if self.threads is not None else max(6, n // 10)
        secrets = self.secrets if self.secrets is not None else max(3, n // 30)
        return Params(n, self.seed, entities, aliases, threads, secrets, self.chars_per_chapter)


class NamePool:
    """Hands out names that are unique across the whole book, so no alias is ever claimed twice."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()  # membership only; never iterated (iteration order is not seeded)

    def take(self, make, tries: int = 200) -> str | None:
        for _ in range(tries):
            name = make()
            if name and len(name) >= 2 and name not in self.used:
                self.used.add(name)
                return name
        return None


def _type_split(total: int) -> list[tuple[str, int]]:
    shares = [("角色", 0.45), ("地点", 0.18), ("势力", 0.12), ("物品", 0.15), ("招式", 0.10)]
    counts = [(t, max(1, int(total * s))) for t, s in shares]
    counts[0] = ("角色", counts[0][1] + total - sum(c for _, c in counts))
    return counts


def build_cast(p: Params, rng: random.Random) -> list[Entity]:
    """E entities (cards for the major characters, roster for the rest) carrying A aliases in total."""
    pool = NamePool(rng)
    r = rng
    makers = {
        "角色": lambda: r.choice(SURNAMES) + "".join(r.choice(GIVEN) for _ in range(r.choice((1, 2, 2)))),
        "地点": lambda: r.choice(PLACE_HEAD) + r.choice(PLACE_MID) + r.choice(PLACE_TAIL),
        "势力": lambda: r.choice(PLACE_HEAD) + r.choice(PLACE_MID) + r.choice(FACTION_TAIL),
        "物品": lambda: r.choice(EPITHET_HEAD) + r.choice(PLACE_MID) + r.choice(ITEM_TAIL),
        "招式": lambda: r.choice(EPITHET_HEAD) + r.choice(PLACE_MID) + r.choice(SKILL_TAIL),
    }
    cast: list[Entity] = []
    for etype, count in _type_split(p.entities):
        for i in range(count):
            name = pool.take(makers[etype], tries=10_000)
            if name is None:
                raise ValueError(f"could not find {count} unique {etype} names")
            if etype == "角色":
                tier = "核心" if i < 6 else "重要" if i < 30 else "次要" if i < count // 2 else "装饰"
                card = i < max(6, min(120, count // 4))
            else:
                tier = "重要" if i < 10 else "次要"
                card = False
            # Major entities appear from chapter 1; the others are introduced along the book.
            intro = 1 if (tier in ("核心", "重要") or i < 3) else r.randint(1, p.chapters)
            cast.append(Entity(type=etype, name=name, tier=tier, intro=intro, card=card))

    weights = [{"核心": 12, "重要": 5, "次要": 2, "装饰": 1}[e.tier] for e in cast]
    remaining, attempts = p.aliases, 0
    while remaining > 0:
        attempts += 1
        if attempts > p.aliases * 50 + 1000:
            raise ValueError(f"could not place {p.aliases} unique aliases")
        e = r.choices(cast, weights)[0]
        if len(e.aliases) >= 12:
            continue
        alias = pool.take(lambda e=e: _alias_candidate(e, r), tries=20)
        if alias is None:
            continue
        entry = {"alias": alias, "from": None}
        if e.card and r.random() < 0.15:
            entry["from"] = r.randint(max(1, e.intro), max(e.intro, p.chapters))
        e.aliases.append(entry)
        remaining -= 1
    return cast


def _alias_candidate(e: Entity, r: random.Random) -> str:
    name = e.name
    if e.type == "角色":
        surname = name[:2] if name[:2] in SURNAMES else name[0]
        given = name[len(surname) :]
        pick = r.randint(0, 6)
        if pick == 0:
            return "小" + given[-1]
        if pick == 1:
            return "阿" + given[-1]
        if pick == 2:
            return surname + r.choice(TITLES)
        if pick == 3:
            return "老" + surname
        if pick == 4 and len(given) == 2:
            return given
        if pick == 5:
            return r.choice(EPITHET_HEAD) + r.choice(EPITHET_BODY) + r.choice(EPITHET_TAIL)
        return r.choice(EPITHET_HEAD) + r.choice(EPITHET_HEAD) + r.choice(EPITHET_TAIL)
    pick = r.randint(0, 2)
    if pick == 0:
        return name[:2]
    if pick == 1:
        return name[:2] + r.choice(
            {"地点": PLACE_TAIL, "势力": FACTION_TAIL, "物品": ITEM_TAIL, "招式": SKILL_TAIL}[e.type]
        )
    return r.choice(EPITHET_HEAD) + name[1:]


# --- threads and secrets --------------------------------------------------------------------------


@dataclass
class ThreadPlan:
    id: str
    type: str
    title: str
    strength: str
    status: str
    opened: int
    planned_end: int | None
    closed: int | None
    history: list[tuple[int, str]]  # (chapter, text), sorted by chapter


def plan_threads(p: Params, rng: random.Random, characters: list[Entity], things: list[Entity]) -> list[ThreadPlan]:
    n = p.chapters
    counters = {t: 0 for t, _ in THREAD_TYPES}
    plans = []
    for _ in range(p.threads):
        ttype = rng.choices([t for t, _ in THREAD_TYPES], [w for _, w in THREAD_TYPES])[0]
        counters[ttype] += 1
        tid = f"{ttype}-{counters[ttype]:03d}"
        opened = rng.randint(1, n)
        subject = rng.choice(characters if ttype != "伏笔" else things + characters).name
        tail = rng.choice(THREAD_TITLE_TAIL[ttype]).format(other=rng.choice(characters).name)
        strength = rng.choice(["高", "中", "中", "低"])
        span = rng.randint(5, 150)
        planned_end = opened + span + rng.randint(0, 20) if (strength == "高" or rng.random() < 0.5) else None
        status, closed = "进行", None
        if opened + span <= n and rng.random() < 0.65:
            status, closed = "已收尾", opened + span
        elif rng.random() < 0.05:
            status = "已放弃"
        last = closed if closed else n
        middle = sorted({rng.randint(opened, last) for _ in range(rng.randint(1, 6))} - {opened, closed})
        history = [(opened, f"{subject}{rng.choice(IDIOMS)}，{rng.choice(THINGS)}初现端倪。")]
        history += [
            (c, f"{rng.choice(characters).name}{rng.choice(VERBS)}，{rng.choice(THINGS)}再起波澜。") for c in middle
        ]
        if closed:
            history.append((closed, f"真相大白，{subject}{rng.choice(IDIOMS)}。"))
        plans.append(ThreadPlan(tid, ttype, subject + tail, strength, status, opened, planned_end, closed, history))
    return plans


def thread_markdown(t: ThreadPlan, rng: random.Random) -> str:
    fm = {
        "id": t.id,
        "title": t.title,
        "strength": t.strength,
        "status": t.status,
        "opened": t.opened,
        "planned_end": t.planned_end,
        "closed": t.closed,
    }
    lines = [_front_matter(fm), "## 描述", f"{t.title}：{rng.choice(THINGS)}牵出旧事，{rng.choice(FEELINGS)}。", ""]
    lines += ["## 履历"] + [f"- 第{c}章：{text}" for c, text in t.history] + [""]
    end = t.planned_end or t.opened + 30
    lines += ["## 收尾计划", f"第{end}章前后，{rng.choice(CONNECTORS)}揭开{t.title}。", ""]
    return "\n".join(lines)


def secret_markdown(i: int, p: Params, rng: random.Random, characters: list[Entity]) -> str:
    registered = rng.randint(1, p.chapters)
    knowers = rng.sample(characters, k=min(len(characters), rng.randint(1, 3)))
    known_to: list = []
    for k in knowers:
        if rng.random() < 0.4:
            known_to.append({"name": k.name, "since": rng.randint(registered, p.chapters)})
        else:
            known_to.append(k.name)
    reader_knows = rng.random() < 0.4
    reader_told = rng.randint(registered, p.chapters) if reader_knows else None
    subject = rng.choice(characters).name
    fm = {
        "id": f"信息差-{i:03d}",
        "title": f"{subject}{rng.choice(['的真实身份', '身怀异宝', '曾入魔道', '是卧底', '另有师承'])}",
        "known_to": known_to,
        "reader_knows": reader_knows,
        "reader_told": reader_told,
        "registered": registered,
        "keywords": [subject, rng.choice(THINGS)],
    }
    return _front_matter(fm) + f"{subject}{rng.choice(IDIOMS)}，其实{rng.choice(THINGS)}早已说明了一切。\n"


# --- chapters -------------------------------------------------------------------------------------


class ChapterWriter:
    """Writes chapter bodies from the cast: picks who is on stage, then strings sentences together."""

    def __init__(self, cast: list[Entity], rng: random.Random) -> None:
        self.rng = rng
        self.by_type: dict[str, list[Entity]] = {}
        for e in sorted(cast, key=lambda e: (e.intro, e.type, e.name)):
            self.by_type.setdefault(e.type, []).append(e)
        self.intros = {t: [e.intro for e in es] for t, es in self.by_type.items()}
        self.core = [e for e in self.by_type["角色"] if e.tier == "核心"]

    def introduced(self, etype: str, chapter: int) -> list[Entity]:
        return self.by_type[etype][: bisect.bisect_right(self.intros[etype], chapter)]

    def cast_for(self, chapter: int) -> dict[str, list[Entity]]:
        r = self.rng
        chars = self.introduced("角色", chapter)
        on_stage = r.sample(self.core, k=min(2, len(self.core)))
        on_stage += r.sample(chars, k=min(len(chars), r.randint(2, 5)))
        # Recently introduced characters get their first scenes.
        recent = [e for e in chars if chapter - 3 <= e.intro <= chapter]
        on_stage += recent[:2]
        stage = {"角色": list(dict.fromkeys(on_stage))}
        for t in ("地点", "势力", "物品", "招式"):
            avail = self.introduced(t, chapter)
            recent = [e for e in avail if e.intro == chapter]
            stage[t] = list(dict.fromkeys(recent + r.sample(avail, k=min(len(avail), r.randint(1, 2)))))
        return stage

    def body(self, chapter: int, stage: dict[str, list[Entity]], target: int) -> str:
        r = self.rng

        last: list[Entity] = []

        def who(avoid: bool = False) -> str:
            e = r.choice(stage["角色"])
            if avoid and last and e is last[0] and len(stage["角色"]) > 1:
                e = stage["角色"][(stage["角色"].index(e) + 1) % len(stage["角色"])]
            last[:] = [e]
            return r.choice(e.names_at(chapter)) if r.random() < 0.45 else e.name

        def what(t: str) -> str:
            es = stage[t]
            if not es:
                return r.choice(THINGS)
            e = r.choice(es)
            return r.choice(e.names_at(chapter))

        templates = [
            lambda: f"{r.choice(SCENERY)}。",
            lambda: f"{who()}{r.choice(VERBS)}，{r.choice(IDIOMS)}地看着{who(avoid=True)}。",
            lambda: f"{r.choice(CONNECTORS)}，{who()}{r.choice(FEELINGS)}，{r.choice(VERBS)}。",
            lambda: f"{who()}立于{what('地点')}之上，{r.choice(SCENERY)}。",
            lambda: f"{what('势力')}的人{r.choice(IDIOMS)}，{r.choice(THINGS)}让{who()}{r.choice(FEELINGS)}。",
            lambda: f"{who()}祭出{what('物品')}，一式{what('招式')}{r.choice(IDIOMS)}，{r.choice(THINGS)}为之一震。",
            lambda: f"{who()}{r.choice(SAY)}：“{r.choice(SPEECH)}{r.choice(SPEECH_END)}”",
            lambda: (
                f"“{r.choice(SPEECH)}{r.choice(SPEECH_END)}”{who()}{r.choice(VERBS)}，{r.choice(SAY)}，“{r.choice(SPEECH)}。”"
            ),
            lambda: f"{who()}想起{what('地点')}的那一夜，想起{r.choice(THINGS)}，{r.choice(FEELINGS)}。",
        ]
        weights = [1, 3, 2, 1, 1, 2, 3, 2, 1]
        paragraphs, size = [], 0
        while size < target:
            para = "".join(t() for t in r.choices(templates, weights, k=r.randint(1, 4)))
            paragraphs.append(para)
            size += len(para)
        return "\n\n".join(paragraphs) + "\n"


def chapter_markdown(
    number: int,
    *,
    writer: ChapterWriter,
    p: Params,
    refs: dict[str, list[str]],
    volume: int,
) -> tuple[str, dict]:
    """Return (file text, timeline row) for one chapter."""
    r = writer.rng
    stage = writer.cast_for(number)
    pov = stage["角色"][0]
    year = 320 + number // 40
    story_time = f"青岚历{chinese_number(year)}年·{SEASONS[(number // 10) % 4]}"
    place = stage["地点"][0].name if stage["地点"] else "山门"
    summary = f"{pov.name}在{place}{r.choice(VERBS)}，{r.choice(THINGS)}{r.choice(['引出旧事', '惊动各方', '暗藏杀机', '终见分晓'])}。"
    fm = {
        "title": r.choice(TITLE_HEAD) + r.choice(TITLE_TAIL),
        "volume": volume,
        "perspective": r.choice(pov.names_at(number)) if r.random() < 0.2 else pov.name,
        "story_time": story_time,
        "chapter_position": r.choice(POSITIONS),
        "hook_type": f"{r.choice(HOOK_KINDS)}-{r.choice(HOOK_STRENGTHS)}",
        "mood_position": r.choice(MOODS),
        "summary": summary,
        "threads": {
            "opens": refs.get("opens", []),
            "advances": refs.get("advances", []),
            "closes": refs.get("closes", []),
        },
    }
    if number % 25 == 0 or refs.get("closes"):
        fm["key_chapter"] = True
    text = _front_matter(fm) + writer.body(number, stage, p.chars_per_chapter)
    row = {
        "章": number,
        "书内时间": story_time,
        "事件": summary.rstrip("。"),
        "在场人物": "、".join(e.name for e in stage["角色"][:5]),
    }
    return text, row


# --- documents ------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block mappings, but lists of scalars inline (``aliases: [小风, 林师弟]``) as authors write them."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(x, dict | list) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def _yaml(data: dict) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, default_flow_style=False, width=1000)


def _front_matter(data: dict) -> str:
    return f"---\n{_yaml(data)}---\n"


def _sections(title: str, sections: list[tuple[str, str]]) -> str:
    out = [f"# {title}", ""]
    for heading, text in sections:
        out += [f"## {heading}", text, ""]
    return "\n".join(out)


def character_card(
    e: Entity,
    rng: random.Random,
    *,
    protagonist: bool,
    places: list[Entity],
    items: list[Entity],
    factions: list[Entity],
) -> str:
    aliases: list = []
    for a in e.aliases:
        if a.get("from"):
            aliases.append({"alias": a["alias"], "from": a["from"], "note": "后期称呼"})
        else:
            aliases.append(a["alias"])
    fm = {
        "name": e.name,
        "aliases": aliases,
        "tier": e.tier,
        "protagonist": protagonist,
        "status": "存活",
        "location": rng.choice(places).name,
        "realm": rng.choice(REALMS),
        "possessions": [i.name for i in rng.sample(items, k=min(len(items), rng.randint(0, 2)))],
        "faction": rng.choice(factions).name,
    }
    body = _sections(
        e.name,
        [
            ("外貌", f"{rng.choice(SCENERY)}之中，{e.name}一袭长衫，{rng.choice(IDIOMS)}。"),
            ("性格", f"{rng.choice(IDIOMS)}，{rng.choice(FEELINGS)}时也从不示弱。"),
        ],
    )
    return _front_matter(fm) + body


def roster_yaml(cast: list[Entity]) -> str:
    roster: dict[str, list] = {"地点": [], "物品": [], "势力": [], "招式": [], "角色": []}
    for e in cast:
        if e.card:
            continue
        item: dict = {"name": e.name}
        if e.aliases:
            item["aliases"] = [a["alias"] for a in e.aliases]
        item["desc"] = f"{e.type}，第{e.intro}章起出场"
        if e.type == "角色":
            item["tier"] = e.tier
        roster[e.type].append(item)
    return _yaml(roster)


def timeline_markdown(volume: int, rows: list[dict]) -> str:
    out = [f"# 第{volume}卷时间线", "", "| 章 | 书内时间 | 事件 | 在场人物 |", "|---|---|---|---|"]
    out += [f"| {r['章']} | {r['书内时间']} | {r['事件']} | {r['在场人物']} |" for r in rows]
    return "\n".join(out) + "\n"


def _write(path: Path, text: str, counts: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    counts["files"] += 1
    counts["bytes"] += len(data)


def chapter_path(root: Path, number: int) -> Path:
    volume = (number - 1) // CHAPTERS_PER_VOLUME + 1
    return root / "定稿" / "正文" / f"第{volume}卷" / f"第{number:04d}章.md"


# --- the book -------------------------------------------------------------------------------------


def _state(p: Params) -> tuple[random.Random, list[Entity], list[ThreadPlan]]:
    rng = random.Random(p.seed)
    cast = build_cast(p, rng)
    characters = [e for e in cast if e.type == "角色"]
    things = [e for e in cast if e.type in ("物品", "地点")]
    threads = plan_threads(p, rng, characters, things)
    return rng, cast, threads


@functools.lru_cache(maxsize=4)
def _cast(p: Params) -> list[Entity]:
    """The cast of a book, rebuilt from its arguments (cached: chapter_append is called in loops)."""
    return _state(p)[1]


def generate_book(
    out: Path,
    *,
    chapters: int,
    seed: int = 1,
    entities: int | None = None,
    aliases: int | None = None,
    threads: int | None = None,
    secrets: int | None = None,
    chars_per_chapter: int = 3000,
) -> dict:
    """Write a synthetic book into ``out`` (which must be empty or absent) and return counts."""
    if chapters < 1:
        raise ValueError("chapters must be ≥ 1")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty")
    p = Params(chapters, seed, entities, aliases, threads, secrets, chars_per_chapter).resolved()
    rng, cast, plans = _state(p)
    counts = {"files": 0, "bytes": 0}
    characters = [e for e in cast if e.type == "角色"]
    by_type = {t: [e for e in cast if e.type == t] for t in ("地点", "物品", "势力")}
    n_volumes = math.ceil(chapters / CHAPTERS_PER_VOLUME)
    volume_names = [rng.choice(TITLE_HEAD) + rng.choice(TITLE_TAIL) for _ in range(n_volumes)]

    book = {
        "title": "青岚剑录（合成）",
        "genre": "仙侠",
        "volumes": [
            {
                "number": v + 1,
                "name": volume_names[v],
                "chapters": [v * CHAPTERS_PER_VOLUME + 1, min(chapters, (v + 1) * CHAPTERS_PER_VOLUME)],
            }
            for v in range(n_volumes)
        ],
        "style_baseline": [1, min(10, chapters)],
        "thresholds": {"伏笔": 30, "悬念": 10, "感情线": 20, "secret_accumulation": 50, "weak_hook_streak": 3},
    }
    _write(out / "book.yaml", _yaml(book), counts)
    params = {
        k: getattr(p, k) for k in ("chapters", "seed", "entities", "aliases", "threads", "secrets", "chars_per_chapter")
    }
    _write(out / PARAMS_FILE, json.dumps(params, ensure_ascii=False, indent=2) + "\n", counts)

    refs: dict[int, dict[str, list[str]]] = {}
    for t in plans:
        for c, _ in t.history:
            kind = "opens" if c == t.opened else "closes" if c == t.closed else "advances"
            refs.setdefault(c, {}).setdefault(kind, []).append(t.id)
    for t in plans:
        _write(out / "线索" / f"{t.id}.md", thread_markdown(t, rng), counts)
    for i in range(1, p.secrets + 1):
        _write(out / "信息差" / f"信息差-{i:03d}.md", secret_markdown(i, p, rng, characters), counts)

    cards = [e for e in characters if e.card]
    for i, e in enumerate(cards):
        card = character_card(
            e, rng, protagonist=i == 0, places=by_type["地点"], items=by_type["物品"], factions=by_type["势力"]
        )
        _write(out / "设定" / "角色" / f"{e.name}.md", card, counts)
    _write(out / "设定" / "名册.yaml", roster_yaml(cast), counts)
    _write(out / "设定" / "世界观.md", _worldview(rng, cast), counts)
    _write(out / "大纲" / "总纲.md", _master_outline(rng, cards, chapters), counts)
    _write(
        out / "文风" / "基调.md",
        _sections("文风", [("叙述", "短句为主，少用形容词。"), ("对话", "对话用“”，一段一人。")]),
        counts,
    )

    writer = ChapterWriter(cast, rng)
    chars_total = 0
    for v in range(n_volumes):
        first, last = v * CHAPTERS_PER_VOLUME + 1, min(chapters, (v + 1) * CHAPTERS_PER_VOLUME)
        rows = []
        for number in range(first, last + 1):
            text, row = chapter_markdown(number, writer=writer, p=p, refs=refs.get(number, {}), volume=v + 1)
            _write(chapter_path(out, number), text, counts)
            chars_total += len(text)
            rows.append(row)
        _write(out / "时间线" / f"第{v + 1}卷.md", timeline_markdown(v + 1, rows), counts)
        _write(
            out / "大纲" / "卷纲" / f"第{v + 1}卷.md",
            _volume_outline(rng, v + 1, volume_names[v], first, last, cards),
            counts,
        )

    return {
        "chapters": chapters,
        "volumes": n_volumes,
        "entities": len(cast),
        "characters_with_card": len(cards),
        "aliases": sum(len(e.aliases) for e in cast),
        "threads": len(plans),
        "secrets": p.secrets,
        "files": counts["files"],
        "bytes": counts["bytes"],
        "chapter_chars": chars_total,
    }


def chapter_append(root: Path, *, number: int | None = None) -> Path:
    """Write chapter ``number`` (default: the next one) of a generated book, in the same style and
    with the same cast (read back from ``.gen_book.json``). Used by bench_finalize.

    The chapter advances no thread and carries ``volume:`` of the last volume, so it needs no
    book.yaml change. Its randomness is seeded by (seed, number): deterministic, yet different per chapter.
    """
    root = Path(root)
    params = json.loads((root / PARAMS_FILE).read_text(encoding="utf-8"))
    cast = _cast(Params(**params))
    p = Params(**params)
    if number is None:
        number = p.chapters + 1
        while chapter_path(root, number).exists() or _any_chapter_file(root, number):
            number += 1
    writer = ChapterWriter(cast, random.Random(p.seed * 1_000_003 + number))
    volume = math.ceil(p.chapters / CHAPTERS_PER_VOLUME)
    text, _ = chapter_markdown(number, writer=writer, p=p, refs={}, volume=volume)
    path = root / "定稿" / "正文" / f"第{volume}卷" / f"第{number:04d}章.md"
    path.write_text(text, encoding="utf-8")
    return path


def _any_chapter_file(root: Path, number: int) -> bool:
    return any((root / "定稿" / "正文").rglob(f"第{number:04d}章.md"))


def _worldview(rng: random.Random, cast: list[Entity]) -> str:
    places = [e.name for e in cast if e.type == "地点"][:8]
    factions = [e.name for e in cast if e.type == "势力"][:8]
    return _sections(
        "世界观",
        [
            ("境界体系", "、".join(REALMS) + "。每一境又分初期、中期、后期。"),
            ("地理", "东域诸地：" + "、".join(places) + "。"),
            ("势力", "、".join(factions) + "，彼此明争暗斗。"),
            ("历法", "以青岚历纪年，一年四季。"),
            ("禁忌", f"{rng.choice(THINGS)}不可示人，违者{rng.choice(IDIOMS)}。"),
        ],
    )


def _master_outline(rng: random.Random, cards: list[Entity], chapters: int) -> str:
    hero = cards[0].name if cards else "主角"
    return _sections(
        "总纲",
        [
            ("主线", f"{hero}自山门起步，历经{chapters}章，{rng.choice(IDIOMS)}，终成一代剑主。"),
            ("人物", "、".join(e.name for e in cards[:10]) + "。"),
            ("节奏", "每卷一百章：前三十章铺垫，中段推进，卷末大爽。"),
            ("结局", f"{hero}揭开{rng.choice(THINGS)}的真相，{rng.choice(IDIOMS)}。"),
        ],
    )


def _volume_outline(rng: random.Random, volume: int, name: str, first: int, last: int, cards: list[Entity]) -> str:
    who = rng.choice(cards).name if cards else "主角"
    return _sections(
        f"第{volume}卷 {name}",
        [
            ("本卷目标", f"第{first}至{last}章：{who}{rng.choice(VERBS)}，{rng.choice(THINGS)}浮出水面。"),
            ("主要事件", f"{rng.choice(SCENERY)}；{rng.choice(CONNECTORS)}，{who}{rng.choice(FEELINGS)}。"),
            ("卷末钩子", f"{rng.choice(THINGS)}{rng.choice(['引出旧事', '惊动各方', '暗藏杀机'])}。"),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate a deterministic synthetic book (docs/book-format.md).")
    parser.add_argument("out", type=Path, help="output folder (must be empty or absent)")
    parser.add_argument("--chapters", type=int, required=True, help="number of chapters")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--entities", type=int, default=None, help="entities in total (default chapters/3, ≥ 20)")
    parser.add_argument(
        "--aliases", type=int, default=None, help="aliases in total (default 2×chapters/3: 2,000 for 3,000)"
    )
    parser.add_argument("--threads", type=int, default=None, help="threads (default chapters/10)")
    parser.add_argument("--secrets", type=int, default=None, help="secrets (default chapters/30)")
    parser.add_argument(
        "--chars-per-chapter", type=int, default=3000, help="body characters per chapter (default 3000)"
    )
    args = parser.parse_args(argv)
    counts = generate_book(
        args.out,
        chapters=args.chapters,
        seed=args.seed,
        entities=args.entities,
        aliases=args.aliases,
        threads=args.threads,
        secrets=args.secrets,
        chars_per_chapter=args.chars_per_chapter,
    )
    json.dump(counts, sys.stdout, ensure_ascii=False, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
