"""item_not_held: a character uses an item that is no longer (or never was) theirs."""

import bisect

from continuity.canon import Canon
from continuity.checks.clauses import disposes, has_verb, is_common_noun, starts_with_verb
from continuity.checks.common import (
    CJK,
    CLAUSE_BREAK,
    ERROR,
    INFO,
    ITEM_FOLLOWERS,
    MENTION_ONLY,
    OBJECT_MARKERS,
    USE_VERB,
    WARNING,
    Mentions,
    finding,
)
from continuity.draft import Draft


def check_items(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    found = []
    gained = {(op.ref, canon.item_canonical(str(op.value))) for op in draft.tag_ops if op.op in ("add", "set")}
    item_spans = [(start, end, name, canon.item_names[name]) for start, end, name in canon.items_in(draft.prose)]
    if not item_spans:
        return []
    chars = mentions.characters()
    ends = [c[1] for c in chars]
    for start, end, _name, item in item_spans:
        if draft.in_quote(start):
            continue
        run_on = end < len(draft.prose) and CJK.match(draft.prose[end]) and draft.prose[end] not in ITEM_FOLLOWERS
        # the nearest character mention ending before the item, in its sentence, at most 12 away
        # (the cheap tests first: most items are nobody's)
        k = bisect.bisect_right(ends, start) - 1
        if k < 0 or start - chars[k][1] > 12:
            continue
        c_start, c_end, _, user = chars[k]
        between = draft.prose[c_end:start]
        # the cheap tests first, the part-of-speech ones last (a POS cut of the stretch): all must pass
        if "的" in between or CLAUSE_BREAK.search(between):
            continue
        if item in canon.held(user.pk) or (user.entity_id, item) in gained or (user.name, item) in gained:
            continue
        lost = canon.lost.get((user.pk, item))
        holder = None if lost is not None else canon.first_holder(item, besides=user.pk)
        if lost is None and holder is None:
            continue
        # the user is the clause's subject: not across a comma, not the object of 把 / 被 / 向 …
        if draft.prose[c_start - 1 : c_start] in OBJECT_MARKERS or mentions.character_between(c_end, start):
            continue
        s_start, _ = draft.sentence(start)
        if c_start < s_start or MENTION_ONLY.search(draft.prose[s_start:start]) or draft.in_quote(c_start):
            continue
        if not (USE_VERB.search(between) or has_verb(between)):
            # a disposal clause (把 / 将 + the item + its verb): the verb after the item uses it
            stop = CLAUSE_BREAK.search(draft.prose, end, end + 12)
            if not disposes(between, draft.prose[end : stop.start() if stop else end + 12]):
                continue
            run_on = False
        # a name running on into more characters is the head of another word (玉月 in 玉月符), unless a
        # verb follows it (哨棒赶将去)
        if run_on and not starts_with_verb(draft.prose[end : end + 4]):
            continue
        if lost is not None:
            evidence = canon.chapter_evidence(lost, entity=user, value=item)
            evidence["fact"] = f"{user.name} 于第{lost}章失去「{item}」"
            severity, message = ERROR, f"{user.name} 已不持有「{item}」（第{lost}章起），本章却在使用"
        else:  # held by another (the tests above left no other case)
            evidence = canon.holding_evidence(holder, item)
            evidence["fact"] = f"「{item}」截至第{canon.as_of}章在 {holder.name} 手中"
            severity, message = WARNING, f"「{item}」在 {holder.name} 手中，{user.name} 却在使用"
            if is_common_noun(item):
                # a kind of thing (a 禅杖, a 戒刀), not one named object: the user may have one of their own
                severity = INFO
                message += f"（「{item}」是常见器物，也许是另一件）"
        found.append(
            finding(
                kind="item_not_held",
                severity=severity,
                draft=draft,
                start=c_start,
                end=end,
                term=f"{user.name}:{item}",
                message=message,
                evidence=evidence,
                suggestion="改由持有者使用，或先写明物品如何回到此人手中并记录持有物变化",
            )
        )
    return found
