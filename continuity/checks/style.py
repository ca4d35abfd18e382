"""banned_word and quote_style: the style file's rules."""

import bisect
import re

from continuity.canon import Canon
from continuity.checks.common import INFO, WARNING, Mentions, finding
from continuity.rules import QUOTE_PAIRS
from continuity.text import Draft

# the quotation marks nested inside each style's own (GB/T 15834: 双引号 outside, 单引号 inside)
NESTED = {"“”": "‘’", "「」": "『』"}
# how many of the book's earlier chapters must use a mark before its use is the book's own habit
# rather than a slip: at least this many, and a tenth of them (a mixed convention: one info per
# chapter) or half of them (the book's convention: nothing said)
BOOK_MARK_MIN_CHAPTERS = 2
MIXED_LINES_SHOWN = 5


def _inside(draft: Draft, pos: int, opening: str) -> bool:
    """Whether ``pos`` is inside a quotation opened by ``opening``."""
    i = bisect.bisect_right(draft._quote_starts, pos) - 1
    if i < 0:
        return False
    start, end = draft._quotes[i]
    if not start < pos < end:
        return False
    # a paragraph continuing a speech starts at its newline: the opening is the speech's first mark
    while draft.prose[start] == "\n" and i > 0:
        i -= 1
        start = draft._quotes[i][0]
    return draft.prose[start] == opening


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


def book_quote_use(canon: Canon, opening: str, chapter: int) -> tuple[int, int]:
    """(chapters using ``opening``, finalized chapters) among the book's chapters before ``chapter``:
    how much the book's own text already uses a quotation mark (one query per mark and canon)."""
    numbers = canon.__dict__.setdefault("_numbers", sorted(canon.chapters))
    total = bisect.bisect_left(numbers, chapter)
    return bisect.bisect_left(canon.chapters_with(opening), chapter), total


def _quote_style(draft: Draft, canon: Canon, mentions: Mentions, *, offset: int, body: str) -> list[dict]:
    rules = canon.rules
    found = []
    wanted = QUOTE_PAIRS[rules.quotes]
    for key, (opening, closing) in QUOTE_PAIRS.items():
        if key == rules.quotes or opening in wanted:
            continue
        inner = NESTED.get(rules.quotes) == key
        per_line: dict[int, list[int]] = {}
        for m in re.finditer(re.escape(opening), body):
            pos = m.start() + offset
            # the standard nesting (‘’ inside “”, 『』 inside 「」) is the style, not a breach of it
            if inner and _inside(draft, pos, wanted[0]):
                continue
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
            # the book's own convention: most of its chapters already use this mark
            continue
        if used >= BOOK_MARK_MIN_CHAPTERS and used * 10 >= total:
            # a mixed convention: one info for the chapter, with the count and the first lines
            lines = sorted(per_line)
            count = sum(len(p) // 2 if opening == closing else len(p) for p in per_line.values())
            where = "、".join(str(n) for n in lines[:MIXED_LINES_SHOWN]) + (
                "…" if len(lines) > MIXED_LINES_SHOWN else ""
            )
            evidence["fact"] += f"；本书前文 {used}/{total} 章也用 {key}"
            found.append(
                finding(
                    kind="quote_style",
                    severity=INFO,
                    draft=draft,
                    start=per_line[lines[0]][0],
                    end=per_line[lines[0]][0] + 1,
                    term=key,
                    message=(
                        f"本章 {len(lines)} 行用了 {key} 引号 {count} 处（第 {where} 行），文风规定为 {rules.quotes}；"
                        f"本书前文 {used}/{total} 章也这样用，引号体例不一"
                    ),
                    evidence=evidence,
                    suggestion=f"统一引号体例：把 {opening}{closing} 换成 {wanted[0]}{wanted[1]}，或在文风文件中改 quotes",
                )
            )
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
