"""The fixed vocabulary of discovery: the language's closed word classes (surnames, honorifics,
first-person words, naming patterns …: lists of Chinese, never of one novel) and the proposal types."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

TYPES = ("角色", "地点", "势力")
Token = tuple[str, str]
Segmenter = Callable[[str], list[Token]]

_HAN = re.compile(r"^[\u3400-\u9fff]+$")
PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})
PLACE_TAGS = frozenset({"ns"})
# A word with one of these tags before 道 is a verb, adverb, pronoun …: 上前道, 他道 name nobody.
NOT_SPEAKER_TAGS = frozenset("vdapcumqyeofrilsz")
NOUNISH = frozenset({"n", "nr", "nrfg", "nrt", "nz", "ng", "nt", "ns"})
ORG_TAGS = frozenset({"nt"})
# Speech verbs that close a dialogue attribution (X道：“…”). Words ending in 道 that are not speech.
SPEECH_END = ("道", "说", "曰")
NOT_SPEECH = frozenset({"知道", "难道", "大道", "味道", "一道", "地道", "街道", "正道", "小道", "道道", "称道", "报道"})
# A word right after one of these is the addressee or object, not the speaker.
# A person word heading a clause speaks through a speech verb at most this many tokens after it (萧承 +
# 顾 + 谓 + 陆澄 + 曰): a predicate between, as the classical register writes it, but still one clause.
HEAD_SPAN = 6
OBJECT_MARKERS = frozenset(
    {"对", "向", "与", "和", "跟", "同", "叫", "问", "望", "朝", "教", "请", "把", "将", "被", "谓"}
)
DEMONSTRATIVES = frozenset({"那", "这", "那个", "这个", "此"})
# Patterns that introduce another name of the person just mentioned.
NAMING = re.compile(
    r"(?:姓[\u4e00-\u9fff]名|法名|名唤|唤名|名叫|名为|唤做|唤作|叫做|叫作|称为|号为|道号|混名|绰号|表字|人称|人唤|号"
    r"|又名|又唤|又叫|又号|又称|一名|别名|别号|小名|乳名|外号|诨名|本名|原名|号称|自称|号曰|名曰)"
)
SELF_INTRO = re.compile(r"(?:我乃|我是|吾乃|吾是|俺是|俺乃|我便是|我就是|在下|我本是|我原是|俺本是|吾本是)")
# First-person words of dialogue: a naming pattern in a line the speaker says of himself (我…法名Y,
# 贫僧…法名Y) names the speaker.
FIRST_PERSON = frozenset({"我", "吾", "俺", "贫僧", "小僧", "老衲", "贫道", "在下", "本王", "朕", "孤", "老身", "小人"})
# What closes a vocative at the head of a quote (“悟净，…” / “八戒！…”).
VOCATIVE_END = frozenset("，！,!")
# A speaker's name for himself, read in his own line: a humble self-word at the head of a clause
# (“弟子陈玄奘，…”, “贫僧玄奘…”), or a first-person word and a naming word (我的法名叫做陈玄奘,
# 贫僧俗名陈玄奘, 我乃Y), the name ending its clause (not 我是唐僧的徒弟, 我乃托塔天王三太子…).
_HUMBLE_SELF = "弟子|贫僧|小僧|老衲|贫道|在下|小人|小神|小弟|小臣|末将|晚生|小生|奴家|妾身|老汉|学生|小可"
HUMBLE_SELF = frozenset(_HUMBLE_SELF.split("|"))  # 弟子慧空: a name after it, no verb of a noun
# The language's own first-person words (any old man says 老夫): never one group's self-name.
SELF_WORDS = (
    FIRST_PERSON
    | HUMBLE_SELF
    | frozenset(
        "老夫 老朽 老子 老娘 本座 本尊 本宫 本官 本帅 本姑娘 洒家 寡人 哀家 愚兄 为师 咱家 人家 我们 咱们".split()
    )
)
_SELF_NAMED = re.compile(
    rf"(?:我|吾|俺|{_HUMBLE_SELF})(?:的)?(?:俗家)?(?:法名|俗名|名唤|名叫|叫做|唤做|乃是|乃|便是|就是|本是)"
    rf"|(?:^|(?<=[，。！？；：,!?;:]))(?:{_HUMBLE_SELF})"
)
_CLAUSE_END = frozenset("，。！？；：,.!?;:、”")
_QUOTE = re.compile(r"“([^“”]*)”")
_ATTRIBUTION = re.compile(r"[道说曰][：:]?(?=“)")
# Identity copulas between two names (唐僧乃金蝉长老, X，即Y), and what after Y makes Y someone else's
# (唐僧乃如来之徒, 我师父乃唐王御弟 is cut off by the name match already).
COPULA = frozenset({"乃", "乃是", "即", "即是", "原是", "本是", "就是", "便是", "原来是"})
COPULA_NOT_SAME = frozenset("之的家门手部麾座御")
# A word this frequent in the segmenter's general dictionary is a common noun (声音, 手指), not a title.
COMMON_WORD = 2000
# Honorific titles written after a name (a fixed list of the language, like SURNAMES; not any novel's).
HONORIFICS = frozenset(
    "真人 道长 道人 长老 大师 法师 禅师 上人 居士 先生 公子 姑娘 小姐 夫人 娘子 老爷 大人 将军 元帅 太子 公主"
    " 王爷 仙子 仙姑 真君 天王 菩萨 尊者 师兄 师姐 师弟 师妹 师叔 师伯 师父 师傅 掌门 宗主 前辈 老祖 祖师".split()
)
# Last characters of place and institution names (洲, 宗, 阁 …): a word of three or more characters
# ending in one names a place or a sect, not a person (城 / 国 / 山 end given names too: not listed).
PLACE_SUFFIXES = frozenset("洲宗阁殿寺观庙洞府州县派帮宫楼镇村岛庄")
# Quote marks inside a naming sentence (叫做‘孙悟空’) do not end it.
INNER_QUOTES = frozenset("‘’「」『』\"'")
# The commonest Chinese surnames (a fixed linguistic list, not any novel's cast): a lone one of these
# that jieba leaves before an unknown given name is that name's first character.
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾萧田董袁潘蒋蔡余杜叶程苏魏吕丁"
    "任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江尹薛段雷侯史陶黎贺顾毛郝龚邵万钱严武戴莫孔汤"
)
# The language's compound surnames (百家姓's 复姓, a closed class like the single ones), less those that are
# common words before a noun too (东方, 西门, 百里, 第五, 单于 …): jieba cuts an unknown given name off them
# (令狐 + 峻, 钟离 + 彦).
DOUBLE_SURNAMES = frozenset(
    "司马 上官 欧阳 夏侯 诸葛 闻人 赫连 皇甫 尉迟 公羊 澹台 公冶 宗政 濮阳 淳于 太叔 申屠 公孙 仲孙 轩辕 令狐 "
    "钟离 宇文 长孙 慕容 鲜于 闾丘 司徒 亓官 司寇 颛孙 端木 巫马 公西 漆雕 乐正 壤驷 公良 拓跋 宰父 谷梁 "
    "段干 东郭 呼延 羊舌 微生 梁丘 左丘 南宫 完颜 独孤 万俟".split()
)
# A one-character given name after a compound surname: a noun, adjective or bound morpheme (峻/ag, 彦/g).
DOUBLE_GIVEN_TAGS = frozenset({"nr", "nz", "ng", "n", "a", "ag", "g"})
# Two names meeting in one sentence (not back to back, not in a naming pattern) in this share of the
# rarer one's occurrences are two people: a strong link must not join them; a weak one yields sooner.
APART_STRONG, APART_WEAK = 0.1, 0.02
GENERIC_APART = 0.2  # a generic word meeting a name in this share of sentences is someone else
CLOSE_COMPANY = 0.6  # … or above which, when it is clearly the closest of its surname's groups
OLD_SURNAME_HELD = 2 / 3  # share of a surname's full-name occurrences one group holds for 老 + it to be that group
# A proposal one of whose names has an uncertain link to another (the same sound only) is
# held under the services' low band (< 0.5): a curator decides, nothing is merged.
UNCERTAIN_CONFIDENCE = 0.45
SAME_COMPANY = 0.85  # cosine of two names' paragraph company above which one surname means one person
_GLUE_HEAD_TAGS = frozenset({"n", "ng", "nr", "j"})
_STATE_AFTER = frozenset({"了", "过", "着", "去", "矣"})
# Characters that make a group, not a name, of the word they begin (众仙, 群妖, 诸将).
COLLECTIVE = frozenset("众诸群各每全满合两")
# The second character of a name jieba cut in two before a speech verb (剑 + 老/a + 道).
SPLIT_SPEAKER_TAGS = frozenset({"a", "ag", "n", "ng", "nr", "j", "b", "g"})
GIVEN_TAGS = frozenset({"nr", "ns", "nz", "ng", "n", "a", "ag"})
# One-character titles after a surname (老孙, 唐王 is a king): not a given name.
HONORIFIC_CHARS = frozenset("王公侯帝后君老爷")
SENTENCE_END = frozenset("。！？!?；;")


@dataclass
class ProposedAlias:
    alias: str
    count: int
    generic: bool
    why: str

    def as_dict(self) -> dict:
        return {"alias": self.alias, "count": self.count, "generic": self.generic, "why": self.why}


@dataclass
class Proposal:
    type: str
    name: str
    count: int
    first_chapter: int
    chapters: int
    confidence: float
    aliases: list[ProposedAlias] = field(default_factory=list)
    signals: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)
    uncertain: str = ""  # why this may be another proposal's person (a link too weak to merge on)

    def names(self) -> list[str]:
        return [self.name, *(a.alias for a in self.aliases)]

    def as_dict(self) -> dict:
        return {
            "type": self.type,
            "name": self.name,
            "aliases": [a.as_dict() for a in self.aliases],
            "confidence": self.confidence,
            "evidence": {
                "count": self.count,
                "first_chapter": self.first_chapter,
                "chapters": self.chapters,
                "signals": dict(self.signals),
                "samples": list(self.samples),
            }
            | ({"uncertain": self.uncertain} if self.uncertain else {}),
        }
