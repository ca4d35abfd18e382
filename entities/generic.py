"""Which names are *generic*: words that name a character only by pronoun, kinship, role or age, so a
mention of them must never be credited to one entity (他 names every man of the book).

The rule is grammatical, not a list tuned to a book (documented in docs/entities.md):

1. a personal pronoun: one character (他 她 它 你 …), or one followed by 们 / 俩;
2. a demonstrative with a classifier in front of anything (那个少年, 这位姑娘, 那名黑衣人);
3. a kinship term, optionally after one ordinal or 大/小/老 (哥哥, 二哥哥, 三叔, 老爷, 大伯, 小妹);
   one-character kin words that are also surnames or names (孙, 儿, 女, 父, 母) count only in compounds
   (孙女, 儿子), so 老孙 stays specific;
4. a bare role, age or gender noun (少年, 少女, 老者, 公子, 师兄, 前辈 …), optionally after 那 / 这 / 此.

A name that carries anything else (a surname: 萧师兄, 林公子; a nickname: 小风) is specific. The
migration of old projects and the extraction ingestion mark such aliases generic on their own; an
author marks any other name generic in 名册 / a card (``generic_aliases``).
"""

import re

PRONOUNS = frozenset("他她它祂牠你您我俺咱其伊侬彼吾汝尔")
KINSHIP = (
    "哥哥 姐姐 弟弟 妹妹 爷爷 奶奶 姥姥 姥爷 外公 外婆 爸爸 妈妈 叔叔 伯伯 舅舅 姑姑 阿姨 婶婶 嫂嫂 嫂子 "
    "父亲 母亲 兄长 兄弟 姐妹 儿子 女儿 孙子 孙女 侄子 侄女 丈夫 妻子 "
    "哥 姐 弟 妹 兄 姊 爷 奶 爹 娘 妈 爸 叔 伯 舅 姑 姨 婶 嫂"
).split()
ROLES = (
    "少年 少女 老者 老人 老头 老头子 老妇 老妪 老太 老太太 老翁 老汉 男子 女子 男人 女人 青年 中年人 孩子 小孩 孩童 "
    "童子 婴儿 汉子 大汉 姑娘 小姐 公子 少爷 老爷 夫人 太太 大人 前辈 晚辈 师父 师傅 师尊 师兄 师姐 师弟 师妹 "
    "道友 阁下 主人 客人 掌柜 店家 小二 官人 娘子 相公 郎君 美人 恩公 壮士 书生 和尚 道士 尼姑 老道 老僧"
).split()
_ORDINAL = "[大二三四五六七八九十小老幺]"
_KINSHIP = re.compile(rf"^{_ORDINAL}?(?:{'|'.join(sorted(KINSHIP, key=len, reverse=True))})+$")
_DEMONSTRATIVE = re.compile(r"^[那这此该][个位名些种][^\s]+$")
_ROLES = frozenset(ROLES)


def alias_is_generic(name: str) -> bool:
    """True when ``name`` names a character only by pronoun, kinship, role or age (see the module)."""
    name = name.strip()
    if not name:
        return False
    if name in PRONOUNS or (len(name) == 2 and name[0] in PRONOUNS and name[1] in "们俩"):
        return True
    if _DEMONSTRATIVE.match(name):
        return True
    bare = name[1:] if len(name) > 2 and name[0] in "那这此" else name
    return bare in _ROLES or bool(_KINSHIP.match(bare))
