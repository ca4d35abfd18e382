"""inactive_acts: a character who cannot act (dead, sealed, missing …) acts or speaks."""

from continuity.canon import Canon
from continuity.checks.common import ERROR, Mentions, _acts, _where, finding
from continuity.draft import Draft


def check_inactive(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    rules = canon.rules
    found = []
    revived = {op.ref for op in draft.tag_ops if op.field == "status" and not rules.inactive(op.value)}
    inactive = canon.inactive_pks
    for start, end, name, entity in mentions.characters():
        if entity.pk not in inactive or entity.entity_id in revived or name in revived:
            continue
        status = canon.states.get(entity.pk, {}).get("status")
        if not _acts(draft, start, end):
            continue
        evidence = canon.state_evidence(entity, "status", status)
        evidence["fact"] = f"{entity.name} 状态为「{status}」（截至第{canon.as_of}章）"
        found.append(
            finding(
                kind="inactive_acts",
                severity=ERROR,
                draft=draft,
                start=start,
                end=end,
                term=entity.name,
                message=f"{entity.name} 已「{status}」，却在本章行动或说话",
                evidence=evidence,
                suggestion=f"改为回忆或他人提及，或先写明{entity.name}的状态变化（{_where(evidence)}）",
            )
        )
    return found
