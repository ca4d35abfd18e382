"""What every finding kind shares: severities, the kinds and their labels, the finding dict, the
names matched in the draft (``Mentions``) and the clause rules that tell a name acting from a name
mentioned.

The sentence-level rules are general Chinese grammar, not lists of this book's words: a speaker is a
name followed by a speech verb (张三道 / 张三冷笑道 / “……”张三说); an actor is a name at the head
of a clause followed by an action verb; a name after 想起 / 提起 / 当年 …, inside someone's quoted
speech, or followed by 的 is only mentioned. See docs/continuity.md for each kind."""

import bisect
import re
from typing import Any

from continuity.canon import CHARACTER, Canon, EntityRow
from continuity.checks.clauses import clause_subject_acts, modifies_noun, object_of_verb
from continuity.draft import Draft

ERROR, WARNING, INFO = "error", "warning", "info"

KINDS = {
    "inactive_acts": "不能行动的角色在行动或说话",
    "realm_lower": "境界低于已有境界",
    "realm_jump": "境界跳级且无突破记录",
    "item_not_held": "使用已不在手中的物品",
    "alias_window": "别名在有效期外使用",
    "name_typo": "疑似人名错字",
    "secret_early": "读者尚不知的信息差提前出现",
    "pov_knowledge": "视角人物知道其不知的信息差",
    "banned_word": "文风禁用词",
    "quote_style": "引号与文风规定不符",
    "thread_unknown": "章节信息（开头 --- 之间）引用不存在的线索",
    "thread_closed": "推进或收尾已收尾的线索",
    "thread_not_open": "推进尚未开启的线索",
    "thread_due": "计划本章收尾的线索未收尾",
    "weak_hook_streak": "弱钩连续超过阈值",
}

SPEECH = re.compile(
    r"([^，。！？；：“”「」\n的之被]{0,6}?)"
    r"(?:说道|问道|答道|喝道|笑道|叫道|喊道|骂道|叹道|吼道|怒道|低语|喃喃|开口|道|说|问|答|喝|吼|喊|骂|嚷)"
    r"(?=[：:，,。！？!?“「]|$)"
)
ACTION = re.compile(
    r"(?:[缓慢猛忽突默轻又再也便就才已却竟终还正刚立当])?(?:[缓慢猛忽突默轻]然|[缓慢轻]缓|猛地|忽地|一把|一步|随手|伸手)?"
    r"(?:起身|站起|转身|回头|抬头|低头|点头|摇头|皱眉|咬牙|冷笑|微笑|大笑|叹息|伸手|抬手|挥手|拱手|抱拳|拔剑|出手|出剑"
    r"|走|站|坐|跪|抬|伸|抓|握|挥|拔|看|望|盯|瞪|拿|取|递|推|拉|跑|跳|冲|扑|拍|按|踏|迈|抱|举|扔|掷|刺|劈|砍|踢|打|闪|退"
    r"|掠|跃|飞|睁|闭|吸|吐|笑|哭|叹|怒|抢|夺|接|扶|捏|攥|按|扬|摸|踹|拦|挡|迎)"
)
MENTION_ONLY = re.compile(
    r"想起|想到|记起|记得|回忆|回想|忆起|梦见|梦到|提起|提到|说起|谈起|念及|怀念|追忆|祭奠|悼念|纪念|听说|据说|传说|传闻"
    r"|当年|生前|昔日|曾经|从前|以前|那年|若是|如果|假如|要是|倘若|遗言|遗物|遗愿|坟|墓|灵位|牌位"
)
PAST_AFTER = re.compile(r"^(?:曾|曾经|当年|生前|在世|死前|临死|临终|从前|以前|的)")
REALM_PREDICATE = re.compile(
    r"^[^，。！？；“”]{0,6}?(?:已是|已经是|乃是|乃|是|达到|到了|晋入|踏入|突破到|突破至|突破了|升至|成为|跌落|跌回|只是|不过是|还是"
    r"|的修为|的境界|修为|境界)[^，。！？；“”]{0,3}$"
)
PAST_REALM = re.compile(r"曾|当年|以前|从前|那时|原本|本是|昔日|年前|早年")
BREAKTHROUGH = re.compile(r"突破|晋入|踏入|破境|晋升|冲破|迈入|进阶|晋阶|结丹|筑基成功|凝婴")
USE_VERB = re.compile(
    r"拔出|握着|握住|握紧|举起|取出|掏出|祭出|拿出|拿着|亮出|摸出|抽出|提着|捧着|捧出|扬起|挥动|挥起|挥舞|递出|展开|用|持|握|提|捏|攥|执|挥"
)
KNOWS = re.compile(r"知道|明白|清楚|心知|料到|猜到|认出|想到|早知|晓得")
ITEM_FOLLOWERS = frozenset("了着过的和与便就也又都")
OBJECT_MARKERS = frozenset("把将被向对给和与跟替让叫")
CLAUSE_BREAK = re.compile("[，,；;：:]")
CJK = re.compile(r"[\u3400-\u9fff]")


def finding(
    *,
    kind: str,
    severity: str,
    draft: Draft,
    start: int,
    end: int,
    term: str,
    message: str,
    evidence: dict[str, Any],
    suggestion: str,
) -> dict[str, Any]:
    return {
        "kind": kind,
        "kind_label": KINDS[kind],
        "severity": severity,
        "line": draft.line_of(start),
        "quote": draft.quote(start, end),
        "term": term,
        "message": message,
        "evidence": evidence,
        "suggestion": suggestion,
        "waived": False,
    }


def _where(evidence: dict[str, Any]) -> str:
    parts = []
    if evidence.get("chapter"):
        parts.append(f"第{evidence['chapter']}章")
    if evidence.get("file"):
        parts.append(evidence["file"] + (f":{evidence['line']}" if evidence.get("line") else ""))
    return "，".join(parts) or "设定"


# ── names in the draft ─────────────────────────────────────────────────────────────────────────


class Mentions:
    """Every leftmost-longest name match of the draft, resolved at the draft's chapter."""

    def __init__(self, draft: Draft, canon: Canon, number: int) -> None:
        automaton = canon.matcher.automaton
        self.spans: list[tuple[int, int, str]] = (
            [(end - len(name) + 1, end + 1, name) for end, name in automaton.iter_long(draft.prose)]
            if automaton is not None and draft.prose
            else []
        )
        self._starts = [start for start, _, _ in self.spans]
        self.chapter = number
        self.canon = canon
        self._who: dict[tuple[str, tuple[str, ...]], EntityRow | None] = {}
        self._characters: list[tuple[int, int, str, EntityRow]] | None = None
        self._names: set[str] | None = None

    def names(self) -> set[str]:
        """The distinct names matched in the draft."""
        if self._names is None:
            self._names = {name for _, _, name in self.spans}
        return self._names

    def who(self, name: str, types: tuple[str, ...] = (CHARACTER,)) -> EntityRow | None:
        key = (name, types)
        if key not in self._who:
            self._who[key] = self.canon.entity_of(name, number=self.chapter, types=types)
        return self._who[key]

    def characters(self) -> list[tuple[int, int, str, EntityRow]]:
        """(start, end, name, entity) of every mention that names one character at the chapter."""
        if self._characters is None:
            of = {name: self.who(name) for name in self.names()}
            self._characters = [(s, e, n, of[n]) for s, e, n in self.spans if of[n] is not None]
        return self._characters

    def character_between(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, start)
        while i < len(self.spans) and self.spans[i][0] < end:
            s, e, n = self.spans[i]
            if e <= end and self.who(n) is not None:
                return True
            i += 1
        return False


# a preposition or object marker right before a name: the name is its object (在晁盖恐托胆称王 / 把晁盖
# 葬了 / 对晁盖道), not the clause's subject
OBJECT_OF = frozenset("在于对向把将给替")
# a dream, a vision, a ghost told anywhere in the paragraph: the dead who speak in it are seen, not alive
# (是夜……闪闪走出一人……却是天王晁盖……晁盖道：『兄弟不知……』……却是南柯一梦)
VISION = re.compile(r"梦|幻影|幻象|幻境|魂|魄|鬼|显圣|显灵|托梦|附体|英灵|亡灵")


def _vision(prose: str, start: int, end: int) -> bool:
    """Whether the paragraph around prose[start:end] tells a dream, a vision or a ghost."""
    first = prose.rfind("\n", 0, start) + 1
    last = prose.find("\n", end)
    return bool(VISION.search(prose, first, len(prose) if last == -1 else last))


def _acts(draft: Draft, start: int, end: int) -> bool:
    """Whether the name at prose[start:end] speaks or acts there (not merely mentioned)."""
    prose = draft.prose
    if draft.in_quote(start):
        return False
    after = prose[end : end + 14]
    if PAST_AFTER.match(after):
        return False
    clause = draft.clause_start(start)
    sentence_start, _ = draft.sentence(start)
    if MENTION_ONLY.search(prose[sentence_start:start]):
        return False
    prefix = prose[clause:start]
    if prefix[-1:] in OBJECT_OF or _vision(prose, start, end) or object_of_verb(prefix):
        return False
    speech = SPEECH.match(after)
    if speech:
        # 冷笑道 / 缓缓说道, not 旧居门上写道 (the name modifies a noun before the verb)
        return len(prefix) <= 8 and not (speech.group(1) and modifies_noun(speech.group(1)))
    if ACTION.match(after):
        return len(prefix) <= 2 or prefix.endswith("见")
    # any other verb, any register (曰, 问曰, 大呼, 提刀, 挺戟, 纵马, 方知 …): by clause structure and part of speech
    return clause_subject_acts(draft, start, end, prefix)
