"""alias_window: an alias used outside the chapters it is valid in."""

import re
from collections import Counter

from continuity.canon import Canon
from continuity.checks.common import INFO, WARNING, Mentions, finding
from continuity.draft import Draft

_VERSE_BREAK = re.compile("[，,。；;！!？?、\\s]+")


def in_verse(draft: Draft, pos: int) -> bool:
    """Whether ``pos`` is in a line of verse: two or more clauses of one length, four to seven characters
    (a regulated poem, a rhyme, a couplet) — the line's shape, not a list of the words that announce it."""
    text = draft.line_text(draft.line_of(pos)).strip()
    clauses = [c for c in _VERSE_BREAK.split(text) if c]
    return len(clauses) >= 2 and len({len(c) for c in clauses}) == 1 and 4 <= len(clauses[0]) <= 7


def check_alias_windows(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    found, seen = [], Counter()
    chapter = mentions.chapter
    windowed = canon.windowed_names()
    if windowed.isdisjoint(mentions.names()):
        return found
    for start, end, name in mentions.spans:
        if name not in windowed or canon.matcher.candidates(name, chapter):
            continue
        rows = [r for r in canon.aliases.get(name, []) if r[0] in canon.entities]
        if not rows:
            continue
        pk, vf, vt, note, _, _ = rows[0]
        entity = canon.entities[pk]
        seen[name] += 1
        window = f"第{vf}章起" if vf and not vt else f"至第{vt}章" if vt and not vf else f"第{vf}–{vt}章"
        line = canon.source_line(entity.source_path, name)
        evidence = {"chapter": None, "file": entity.source_path, "line": line}
        if line is None:  # declared by a tag in a chapter: the one its window opens in, else any
            numbers = [vf] if vf in canon.chapters else []
            for number in [*numbers, *(n for n in canon.chapters if n != vf)]:
                tag = next((t for t in canon.tags_of(number) if f'alias="{name}"' in t.get("text", "")), None)
                if tag is not None:
                    evidence = {
                        "chapter": number,
                        "file": canon.chapter_path(number),
                        "line": tag.get("line"),
                    }
                    break
        evidence["fact"] = f"别名「{name}」指 {entity.name}，有效期 {window}" + (f"（{note}）" if note else "")
        # inside someone's speech or a poem, an old (or coming) name is a voice's, not the narrator's slip
        quoted = draft.in_quote(start) or in_verse(draft, start)
        found.append(
            finding(
                kind="alias_window",
                severity=INFO if quoted else WARNING,
                draft=draft,
                start=start,
                end=end,
                term=name,
                message=f"第{chapter}章使用了别名「{name}」，但它只在{window}有效",
                evidence=evidence,
                suggestion=f"改用「{entity.name}」或此时有效的称呼",
            )
        )
    return found
