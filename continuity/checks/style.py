"""banned_word and quote_style: the style file's rules."""

import bisect
import re

from continuity.canon import Canon
from continuity.checks.common import INFO, WARNING, Mentions, finding
from continuity.draft import Draft
from continuity.rules import QUOTE_PAIRS

# the quotation marks nested inside each style's own (GB/T 15834: 双引号 outside, 单引号 inside)
NESTED = {"“”": "‘’", "「」": "『』"}
# how many of the book's earlier chapters must use a mark before its use is the book's own habit
# rather than a slip: at least this many, and a tenth of them (a mixed convention: one info per
# chapter) or half of them (the book's convention: nothing said)
BOOK_MARK_MIN_CHAPTERS = 2
MIXED_LINES_SHOWN = 5
# a chapter using a mark on this many lines has a habit of its own, not a slip (one info, not a warning
# per line)
CHAPTER_HABIT_LINES = 3
# the longest speaker clause before a colon at a paragraph's start (张三道 / 卢俊义冷笑道 / 那汉子大喝道)
SPEAKER_MAX = 10


def _nested(body: str, pos: int, wanted: tuple[str, str], names: set[int]) -> bool:
    """Whether the mark at ``body[pos]`` stands inside a quotation in the style's own marks: the nearest
    of the style's marks before it opens one and the nearest after it closes one. Read over the whole
    chapter, not paragraph by paragraph: an e-book wrapped at a fixed width breaks a speech over several
    paragraphs (“公明哥哥，⏎休怪小弟……说道：‘我家佛⏎堂底下……’”)."""
    opening, closing = wanted
    if opening == closing:
        return body.count(opening, 0, pos) % 2 == 1
    before = max(body.rfind(opening, 0, pos), body.rfind(closing, 0, pos))
    if before == -1 or body[before] != opening:
        return False
    # a paragraph that opens with a name speaking (花荣道：『…』) starts a speech, whatever was left open
    # before it (``names``: where a character's name starts)
    paragraph = body.rfind("\n", 0, pos) + 1
    head = body[paragraph:pos]
    speaker = paragraph + len(head) - len(head.lstrip())
    if before < paragraph and speaker in names and pos - speaker <= SPEAKER_MAX + 1 and body[pos - 1] in "：:":
        return False
    after = [i for i in (body.find(opening, pos + 1), body.find(closing, pos + 1)) if i != -1]
    return bool(after) and body[min(after)] == closing


def check_style(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    found = []
    prose = draft.prose
    body = prose[len(prose) - len(prose.lstrip("\n")) :] if prose else ""
    offset = len(prose) - len(body)
    for word, source in rules.banned_words.items():
        hits = [m.start() + offset for m in re.finditer(re.escape(word), body)]
        for n, start in enumerate(hits, start=1):
            evidence = {"chapter": None, "file": source, "line": canon.source_line(source, word)}
            evidence["fact"] = f"文风规定禁用「{word}」"
            found.append(
                finding(
                    kind="banned_word",
                    severity=WARNING,
                    draft=draft,
                    start=start,
                    end=start + len(word),
                    term=word,
                    message=f"禁用词「{word}」（本章第 {n}/{len(hits)} 处）",
                    evidence=evidence,
                    suggestion=f"删去「{word}」或换成具体的动作、时间描写",
                )
            )
    if rules.quotes:
        found += _quote_style(draft, canon, mentions, offset=offset, body=body)
    return found


def book_quote_use(canon: Canon, opening: str, number: int) -> tuple[int, int]:
    """(chapters opening a speech with ``opening``, finalized chapters) among the book's chapters before
    ``number``: how much the book's own text already quotes with a mark. A speech opens after a colon
    (道：『) or at a paragraph's start; a mark only ever nested inside the style's own (“今日认得『神箭将军』了”) is no such use,
    so a planted 宋江道：『且住。』 is still seen in a book that nests 『』 everywhere (one query per mark
    and canon)."""
    numbers = canon.__dict__.setdefault("_numbers", sorted(canon.chapters))
    total = bisect.bisect_left(numbers, number)
    opening_speech = sorted(set(canon.chapters_with("：" + opening)) | set(canon.chapters_with("\n" + opening)))
    return bisect.bisect_left(opening_speech, number), total


def _quote_style(draft: Draft, canon: Canon, mentions: Mentions, *, offset: int, body: str) -> list[dict]:
    rules = canon.rules
    found = []
    wanted = QUOTE_PAIRS[rules.quotes]
    names: set[int] | None = None
    for key, (opening, closing) in QUOTE_PAIRS.items():
        if key == rules.quotes or opening in wanted or opening not in body:
            continue
        if names is None:
            names = {start - offset for start, _, _, _ in mentions.characters()}
        per_line: dict[int, list[int]] = {}
        for m in re.finditer(re.escape(opening), body):
            # a quotation inside one in the style's own marks (‘’ inside “”, the standard nesting, or
            # 『』 inside “”): the author's nesting, on which the style's one pair does not rule
            if _nested(body, m.start(), wanted, names):
                continue
            pos = m.start() + offset
            per_line.setdefault(draft.line_of(pos), []).append(pos)
        if opening == closing:
            per_line = {line: pos for line, pos in per_line.items() if len(pos) >= 2}
        if not per_line:
            continue
        evidence = {
            "chapter": None,
            "file": rules.quotes_source,
            "line": canon.source_line(rules.quotes_source, "quotes"),
            "fact": f"文风规定对话引号为 {rules.quotes}",
        }
        used, total = book_quote_use(canon, opening, mentions.chapter)
        if used >= BOOK_MARK_MIN_CHAPTERS and used * 2 >= total:
            # the book's own convention: most of its chapters already open speeches with this mark
            continue
        mixed = used >= BOOK_MARK_MIN_CHAPTERS and used * 10 >= total
        if mixed or len(per_line) >= CHAPTER_HABIT_LINES:
            # a mixed convention (the book's, or this chapter's own: a book's first chapters have no
            # earlier ones to learn from): one info for the chapter, with the count and the first lines
            found.append(_mixed(draft, key, per_line, evidence, wanted=wanted, used=used, total=total))
            continue
        for _, positions in sorted(per_line.items()):
            start, count = positions[0], len(positions)
            if opening == closing:
                count //= 2
            found.append(
                finding(
                    kind="quote_style",
                    severity=WARNING,
                    draft=draft,
                    start=start,
                    end=start + 1,
                    term=key,
                    message=f"本行用了 {key} 引号 {count} 处，文风规定为 {rules.quotes}",
                    evidence=evidence,
                    suggestion=f"把 {opening}{closing} 换成 {wanted[0]}{wanted[1]}",
                )
            )
    return found


def _mixed(
    draft: Draft, key: str, per_line: dict[int, list[int]], evidence: dict, *, wanted: tuple, used: int, total: int
) -> dict:
    """The one info of a chapter whose use of a mark is a habit (the book's or its own), not a slip."""
    opening, closing = QUOTE_PAIRS[key]
    lines = sorted(per_line)
    count = sum(len(p) // 2 if opening == closing else len(p) for p in per_line.values())
    where = "、".join(str(n) for n in lines[:MIXED_LINES_SHOWN]) + ("…" if len(lines) > MIXED_LINES_SHOWN else "")
    style = wanted[0] + wanted[1]
    if used >= BOOK_MARK_MIN_CHAPTERS:
        evidence["fact"] += f"；本书前文 {used}/{total} 章也用 {key}"
        habit = f"本书前文 {used}/{total} 章也这样用"
    else:
        evidence["fact"] += f"；本章 {len(lines)} 行一贯用 {key}"
        habit = "本章用得一贯"
    return finding(
        kind="quote_style",
        severity=INFO,
        draft=draft,
        start=per_line[lines[0]][0],
        end=per_line[lines[0]][0] + 1,
        term=key,
        message=(
            f"本章 {len(lines)} 行用了 {key} 引号 {count} 处（第 {where} 行），文风规定为 {style}；{habit}，引号体例不一"
        ),
        evidence=evidence,
        suggestion=f"统一引号体例：把 {opening}{closing} 换成 {style}，或在文风文件中改 quotes",
    )
