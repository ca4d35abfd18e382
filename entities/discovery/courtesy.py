"""Courtesy names (字) in the classical register: who each 字 sentence names. Pure; no Django.

A historical novel introduces a person's courtesy name once (刘备，字玄德), then calls them by it far
more than by the name (玄德曰). The introduction takes a few shapes the language fixes, not one book:
``X，字Y`` / ``X者，字Y`` / ``X字Y`` / ``姓A名B，字Y`` / ``复姓AA，名B，字Y`` / ``此人字Y`` (the person
named in the clause before). Each gives (owner, courtesy name) when both are person words of the book.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

# 字 (or 表字 / 字曰) + two characters ending a clause: the courtesy name.
_ZI = re.compile(r"(?:表)?字(?:曰)?([\u4e00-\u9fff]{2})(?=[，,。；;、：:\s）)])")
# … and a courtesy name changed later, right after it (字长生，后改云长): the one the book then uses.
_CHANGED = re.compile(r"[，,]\s*(?:后改字|后改|改字|又字)([\u4e00-\u9fff]{2})(?=[，,。；;、：:\s）)])")
# 姓A名B / 复姓AA，名B right before it: the name is A + B (the segmenter never sees it whole here).
_XING_MING = re.compile(r"姓([\u4e00-\u9fff]{1,2})[，,]?名([\u4e00-\u9fff]{1,2})$")
# The anaphora of the language (此人字子高): the person is the last one named before it.
_ANAPHORA = ("此人", "其人", "此公", "其")
_SENTENCE_BREAK = re.compile(r"[。！？!?“”「」\n]")
_LOOKBACK = 60  # characters read before an anaphora for the last person named


def _last_person(text: str, person: set[str]) -> str:
    """The last person word (4, 3 or 2 characters, longest first) written in ``text``."""
    for end in range(len(text), 1, -1):
        for k in (4, 3, 2):
            if end - k >= 0 and text[end - k : end] in person:
                return text[end - k : end]
    return ""


def _owner(body: str, start: int, person: set[str]) -> str:
    """Who the 字 at ``start`` belongs to: the name right before it in its sentence."""
    head = body[max(0, start - 20) : start]
    head = _SENTENCE_BREAK.split(head)[-1].rstrip("，, ")
    m = _XING_MING.search(head.replace("，", "").replace(",", "").replace("复姓", "姓"))
    if m and m.group(1) + m.group(2) in person:
        return m.group(1) + m.group(2)
    head = head.removesuffix("者").removesuffix("也")
    for k in (4, 3, 2):
        if len(head) >= k and head[-k:] in person:
            return head[-k:]
    if head.endswith(_ANAPHORA):
        return _last_person(body[max(0, start - _LOOKBACK) : start - len(head)], person)
    return ""


def courtesy_pairs(chapters: Iterable[tuple[int, str]], person: set[str]) -> Counter[tuple[str, str]]:
    """(owner, courtesy name) → how often the book introduces it, both person words of the book."""
    said: Counter[tuple[str, str]] = Counter()
    for _, body in chapters:
        for m in _ZI.finditer(body):
            name = m.group(1)
            owner = _owner(body, m.start(), person)
            if not owner:
                continue
            later = _CHANGED.match(body, m.end())
            for courtesy in (name, later.group(1) if later else ""):
                if courtesy in person and courtesy != owner:
                    said[(owner, courtesy)] += 1
    return said
