"""banned_word and quote_style: the style file's rules."""

import bisect
import re

from continuity.canon import Canon
from continuity.checks.common import WARNING, Mentions, finding
from continuity.rules import QUOTE_PAIRS
from continuity.text import Draft

# the quotation marks nested inside each style's own (GB/T 15834: 双引号 outside, 单引号 inside)
NESTED = {"“”": "‘’", "「」": "『』"}


def _inside(draft: Draft, pos: int, opening: str) -> bool:
    """Whether ``pos`` is inside a quotation opened by ``opening``."""
    i = bisect.bisect_right(draft._quote_starts, pos) - 1
    if i < 0:
        return False
    start, end = draft._quotes[i]
    return start < pos < end and draft.prose[start] == opening


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
            for _, positions in sorted(per_line.items()):
                start, count = positions[0], len(positions)
                if opening == closing:
                    count //= 2
                    if count == 0:
                        continue
                evidence = {
                    "chapter": None,
                    "file": rules.quotes_source,
                    "line": canon.source_line(rules.quotes_source, "quotes"),
                    "fact": f"文风规定对话引号为 {rules.quotes}",
                }
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
