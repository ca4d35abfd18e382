"""realm_lower and realm_jump: a character's cultivation realm against the ladder and the canon."""

import bisect

from continuity.canon import Canon
from continuity.checks.clauses import links_rank
from continuity.checks.common import BREAKTHROUGH, ERROR, PAST_REALM, REALM_PREDICATE, WARNING, Mentions, finding
from continuity.draft import Draft
from continuity.rules import realm_parse, realm_pattern


def check_realms(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    pattern = realm_pattern(rules)
    if pattern is None:
        return []
    found = []
    raised = {}
    for op in draft.tag_ops:
        if op.field == rules.realm_field and op.op == "set":
            raised[op.ref] = realm_parse(rules, op.value)
    chars = mentions.characters()
    starts, ends = [c[0] for c in chars], [c[1] for c in chars]
    for match in pattern.finditer(draft.prose):
        start, end = match.span()
        if draft.in_quote(start):
            continue
        s_start, s_end = draft.sentence(start, end)
        sentence = draft.prose[s_start:s_end]
        if PAST_REALM.search(sentence):
            continue
        # the last character mention before the realm word in its sentence, else the first after it:
        # found by bisection (mentions are sorted and never overlap), not by a scan per realm word
        owner = None
        k = bisect.bisect_right(ends, start) - 1
        stretch = draft.prose[chars[k][1] : start] if k >= 0 and chars[k][0] >= s_start else None
        if stretch is not None and (REALM_PREDICATE.match(stretch) or links_rank(stretch)):
            owner = chars[k]
        else:
            k = bisect.bisect_left(starts, end)
            if k < len(chars) and chars[k][1] <= s_end and draft.prose[end : chars[k][0]] in ("的", "修士", "的修士"):
                owner = chars[k]
        if owner is None:
            continue
        entity = owner[3]
        held_text = canon.states.get(entity.pk, {}).get(rules.realm_field)
        held, said = realm_parse(rules, held_text), realm_parse(rules, match.group(0))
        if held is None or said is None:
            continue
        tag_rank = raised.get(entity.entity_id) or raised.get(entity.name)
        if tag_rank is None:
            tag_rank = next((raised[n] for n in entity.names if n in raised), None)
        evidence = canon.state_evidence(entity, rules.realm_field, held_text)
        evidence["fact"] = f"{entity.name} 境界为「{held_text}」（截至第{canon.as_of}章）"
        if said.position(rules, low=False) < held.position(rules, low=True):
            if tag_rank is not None and said.position(rules, low=False) >= tag_rank.position(rules, low=True):
                continue
            found.append(
                finding(
                    kind="realm_lower",
                    severity=ERROR,
                    draft=draft,
                    start=start,
                    end=end,
                    term=f"{entity.name}:{match.group(0)}",
                    message=f"{entity.name} 已是「{held_text}」，本章写作「{match.group(0)}」",
                    evidence=evidence,
                    suggestion=f"改为「{held_text}」或其上；若是跌境，请写明并记录状态变化",
                )
            )
            continue
        jump = said.position(rules, low=True) - held.position(rules, low=False)
        recorded = tag_rank is not None or BREAKTHROUGH.search(sentence)
        if jump > 1 and not recorded:
            found.append(
                finding(
                    kind="realm_jump",
                    severity=WARNING,
                    draft=draft,
                    start=start,
                    end=end,
                    term=f"{entity.name}:{match.group(0)}",
                    message=f"{entity.name} 由「{held_text}」跳到「{match.group(0)}」（{jump} 级），没有突破记录",
                    evidence=evidence,
                    suggestion="补写突破过程并用 <entity-update> 记录境界，或改回当前境界",
                )
            )
    return found
