"""A title or a nickname joined to its person (entities.discovery.titles): only when the book holds exactly
one full name it can name; concrete values that can fail."""

from entities.discovery.engine import discover
from entities.discovery.titles import KIN_AFTER, _is_title


def _chapters(lines: list[str], n: int = 3) -> list[tuple[int, str]]:
    return [(k + 1, "\n".join(lines)) for k in range(n)]


def _owner(proposals, name: str) -> str | None:
    return next((p.name for p in proposals if name in p.names()), None)


# A doctor and a detective: one full name of each surname, each also called by a title or a nickname.
CLINIC = [
    "韩冬青推开诊室的门，放下药箱，对陆沉舟说了几句。",
    "韩冬青说：“病人睡着了。”陆沉舟点点头。",
    "陆沉舟问韩冬青还要多久，韩冬青摇头。",
    "韩医生摘下口罩，在窗前站了一会儿。",
    "走廊里很静，韩医生一个人坐着写病历。",
    "护士跑进来喊：“韩医生，三床醒了！”",
    "苏九从巷口走过来，手里提着两壶酒，陆沉舟迎上去。",
    "苏九说：“今晚谁也别走。”陆沉舟笑了。",
    "九爷的话，巷子里没人敢不听。",
    "茶馆里坐满了人，九爷慢慢喝着茶。",
    "孟三蹲在门口抽烟，看见陆沉舟来了。",
    "孟三骂了一句，陆沉舟没理他。",
    "老孟把烟头一扔，进了屋。",
    "雨下大了，老孟在屋檐底下发呆。",
]


def test_a_title_and_a_nickname_join_the_one_full_name_they_can_name():
    proposals = discover(_chapters(CLINIC), min_count=5, types=["角色"])
    assert _owner(proposals, "韩医生") == _owner(proposals, "韩冬青") == "韩冬青"
    assert _owner(proposals, "九爷") == _owner(proposals, "苏九") == "苏九"
    assert _owner(proposals, "老孟") == _owner(proposals, "孟三") is not None
    doctor = next(p for p in proposals if p.name == "韩冬青")
    why = {a.alias: a.why for a in doctor.aliases}
    assert why["韩医生"] == "姓「韩」+ 称呼（书中姓「韩」的全名只此一人）"


def test_a_title_of_a_surname_two_people_bear_joins_neither():
    # 韩冬青 and 韩秋生 are two people of one family: 韩医生 could be either, so it stays apart.
    lines = CLINIC + [
        "韩秋生扛着锄头下地去了，苏九在田边等他。",
        "韩秋生说：“地里的麦子熟了。”苏九不吭声。",
        "韩秋生坐在田埂上歇气，孟三递过去一碗水。",
    ]
    proposals = discover(_chapters(lines), min_count=5, types=["角色"])
    assert _owner(proposals, "韩冬青") == "韩冬青" and _owner(proposals, "韩秋生") == "韩秋生"
    assert _owner(proposals, "韩医生") not in {"韩冬青", "韩秋生"}
    assert _owner(proposals, "九爷") == "苏九"  # the other joins still hold


def test_a_title_used_where_the_full_name_never_is_names_someone_else():
    # 罗真人 (a Taoist) in the first chapters, 罗戬 (an official) only in the last ones: one surname, two people.
    first = ["罗真人坐在松下，闭目不语。", "罗真人道：“尘缘未了。”", "公孙胜拜见罗真人。"] * 4
    last = ["罗戬上前启奏道：“臣有一言。”", "天子看了罗戬一眼。", "罗戬退下。"] * 4
    chapters = [(1, "\n".join(first)), (2, "\n".join(first)), (3, "\n".join(last)), (4, "\n".join(last))]
    proposals = discover(chapters, min_count=5, types=["角色"])
    assert _owner(proposals, "罗戬") == "罗戬"
    assert _owner(proposals, "罗真人") != "罗戬"


def test_what_is_a_title_after_a_surname():
    lexicon = {"医生": 4263, "冬青": 45, "掌柜": 394, "大嫂": 300}
    tags = {"医生": "n", "冬青": "nr", "掌柜": "n", "大嫂": "n"}
    assert _is_title("医生", lexicon=lexicon, tags=tags, given=set(), after=0)
    assert _is_title("掌柜", lexicon=lexicon, tags=tags, given=set(), after=0)
    assert not _is_title("冬青", lexicon=lexicon, tags=tags, given=set(), after=0)  # a rare word: a given name
    assert _is_title("冬青", lexicon=lexicon, tags=tags, given=set(), after=2)  # … unless after two surnames
    assert not _is_title("医生", lexicon=lexicon, tags=tags, given={"王医生"}, after=0)  # another's given name
    assert _is_title("姨", lexicon=lexicon, tags=tags, given=set(), after=0) and "姨" in KIN_AFTER
    assert not _is_title("三", lexicon=lexicon, tags=tags, given=set(), after=0)
