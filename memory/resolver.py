"""The conflict resolver: a pure function from one group of facts to their statuses.

A group is every fact of a book with the same (category, subject, field). Rules, applied in order:

1. A fact explicitly revised by another (``revises``) is ``outdated``, superseded by the reviser.
2. A fact whose loop was closed (``closed_chapter`` ≤ as_of) is ``outdated`` (a closed thread
   closes its open loop; a secret told to the reader lifts its constraint).
3. A fact below ``TENTATIVE_BELOW`` confidence is ``tentative`` (it never outdates anything).
4. Among the remaining facts the latest chapter wins: its value is ``active`` and every older fact is
   ``outdated``, superseded by the winner (kept as history, out of the high-priority context).
   Tentative facts older than the winner are outdated too.
5. Two different values from the same latest chapter are both ``contradicted`` until an author
   decides (``decided_at``): the decided value is active, the others outdated.
6. The same value twice in the latest chapter: the first (by key) is active, the rest outdated
   duplicates (compaction removes them).

Ties are broken by ``key``, never by insertion order or time, so the same facts always resolve
to the same statuses. ``as_of`` resolves the group as it stood after that chapter (facts from later
chapters are ignored): the orchestrator uses it so that a pack for chapter 10 of a 300-chapter
book sees chapter 10's truth.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

TENTATIVE_BELOW = 0.5

ACTIVE = "active"
OUTDATED = "outdated"
CONTRADICTED = "contradicted"
TENTATIVE = "tentative"


@dataclass(frozen=True)
class FactView:
    key: str
    value: str
    source_chapter: int
    confidence: float = 1.0
    revises_key: str | None = None
    closed_chapter: int | None = None
    decided_at: datetime | None = None


def fact_views(facts) -> list[FactView]:
    """One group's facts (``Fact`` rows, plain rows or a whole-book derivation's objects: anything with
    their attributes) as the resolver reads them, ``revises`` named by key."""
    ids_to_key = {f.pk: f.key for f in facts}
    return [
        FactView(
            key=f.key,
            value=f.value,
            source_chapter=f.source_chapter,
            confidence=f.confidence,
            revises_key=ids_to_key.get(f.revises_id) if f.revises_id else None,
            closed_chapter=f.closed_chapter,
            decided_at=f.decided_at,
        )
        for f in facts
    ]


@dataclass(frozen=True)
class Resolution:
    status: str
    superseded_by: str | None
    reason: str


def value_normalize(value: str) -> str:
    """Values compare without whitespace differences."""
    return "".join(str(value).split())


def group_resolve(facts: Iterable[FactView], *, as_of: int | None = None) -> dict[str, Resolution]:
    """Statuses of one group's facts (see the module docstring); keyed by fact key."""
    pool = sorted(
        (f for f in facts if as_of is None or f.source_chapter <= as_of), key=lambda f: (f.source_chapter, f.key)
    )
    result: dict[str, Resolution] = {}
    keys = {f.key for f in pool}
    revisers: dict[str, FactView] = {}
    for f in pool:
        if f.revises_key and f.revises_key in keys and f.revises_key not in revisers:
            revisers[f.revises_key] = f
    rest: list[FactView] = []
    for f in pool:
        if f.key in revisers:
            by = revisers[f.key]
            result[f.key] = Resolution(OUTDATED, by.key, f"被第{by.source_chapter}章的修订取代")
        elif f.closed_chapter is not None and (as_of is None or f.closed_chapter <= as_of):
            result[f.key] = Resolution(OUTDATED, None, f"已于第{f.closed_chapter}章收尾")
        else:
            rest.append(f)
    firm = [f for f in rest if f.confidence >= TENTATIVE_BELOW]
    weak = [f for f in rest if f.confidence < TENTATIVE_BELOW]
    if not firm:
        for f in weak:
            result[f.key] = Resolution(TENTATIVE, None, f"置信度 {f.confidence:g} 低于 {TENTATIVE_BELOW:g}")
        return result
    latest_chapter = firm[-1].source_chapter
    latest = [f for f in firm if f.source_chapter == latest_chapter]
    older = [f for f in firm if f.source_chapter < latest_chapter]
    values: dict[str, list[FactView]] = {}
    for f in latest:
        values.setdefault(value_normalize(f.value), []).append(f)
    winner: FactView | None = None
    if len(values) == 1:
        winner = latest[0]
    else:
        decided = [f for f in latest if f.decided_at is not None]
        if decided:
            winner = max(decided, key=lambda f: (f.decided_at, f.key))
    if winner is None:
        for f in latest:
            result[f.key] = Resolution(CONTRADICTED, None, f"第{latest_chapter}章给出了 {len(values)} 个不同的值")
        for f in older + [w for w in weak if w.source_chapter < latest_chapter]:
            result[f.key] = Resolution(OUTDATED, None, f"被第{latest_chapter}章的新值取代（该章的值待裁决）")
    else:
        result[winner.key] = Resolution(ACTIVE, None, "最新值")
        same = value_normalize(winner.value)
        for f in latest:
            if f.key == winner.key:
                continue
            if value_normalize(f.value) == same:
                result[f.key] = Resolution(OUTDATED, winner.key, "重复")
            else:
                result[f.key] = Resolution(OUTDATED, winner.key, "矛盾已裁决，采纳另一值")
        for f in older + [w for w in weak if w.source_chapter < latest_chapter]:
            result[f.key] = Resolution(OUTDATED, winner.key, f"被第{latest_chapter}章的新值取代")
    for f in weak:
        if f.key not in result:
            result[f.key] = Resolution(TENTATIVE, None, f"置信度 {f.confidence:g} 低于 {TENTATIVE_BELOW:g}")
    return result
