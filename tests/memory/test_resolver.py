"""The resolver is a pure function: these cases need no database."""

from datetime import UTC, datetime

from memory.resolver import FactView, group_resolve


def statuses(views, **kw):
    return {k: (r.status, r.superseded_by) for k, r in group_resolve(views, **kw).items()}


def test_latest_chapter_wins_and_older_values_are_outdated():
    views = [FactView("a", "斗者", 10), FactView("b", "斗师", 20), FactView("c", "斗之气", 3)]
    assert statuses(views) == {"a": ("outdated", "b"), "b": ("active", None), "c": ("outdated", "b")}


def test_order_of_input_does_not_matter():
    views = [FactView("a", "斗者", 10), FactView("b", "斗师", 20), FactView("c", "斗之气", 3)]
    assert statuses(views) == statuses(list(reversed(views)))


def test_as_of_sees_the_group_as_it_stood():
    views = [FactView("a", "斗者", 10), FactView("b", "斗师", 20)]
    assert statuses(views, as_of=15) == {"a": ("active", None)}


def test_same_chapter_two_values_are_contradicted_until_decided():
    views = [FactView("a", "斗者", 10), FactView("b", "斗师", 10), FactView("old", "斗之气", 2)]
    assert statuses(views) == {"a": ("contradicted", None), "b": ("contradicted", None), "old": ("outdated", None)}
    decided = [FactView("a", "斗者", 10), FactView("b", "斗师", 10, decided_at=datetime(2026, 1, 1, tzinfo=UTC))]
    assert statuses(decided) == {"a": ("outdated", "b"), "b": ("active", None)}


def test_low_confidence_is_tentative_and_does_not_outdate():
    views = [FactView("a", "斗者", 10), FactView("b", "斗师", 20, confidence=0.3)]
    assert statuses(views) == {"a": ("active", None), "b": ("tentative", None)}


def test_closed_loop_and_explicit_revision():
    assert statuses([FactView("loop", "断剑之谜", 1, closed_chapter=40)]) == {"loop": ("outdated", None)}
    assert statuses([FactView("loop", "断剑之谜", 1, closed_chapter=40)], as_of=39) == {"loop": ("active", None)}
    views = [FactView("r1", "剑冢百年一开", 0), FactView("r2", "剑冢十年一开", 0, revises_key="r1")]
    assert statuses(views) == {"r1": ("outdated", "r2"), "r2": ("active", None)}


def test_same_value_twice_in_a_chapter_is_a_duplicate_not_a_contradiction():
    views = [FactView("a", "斗 者", 10), FactView("b", "斗者", 10)]
    assert statuses(views) == {"a": ("active", None), "b": ("outdated", "a")}
