"""The canon-change report when an entity's state changes are the same but in another order (issue 24:
``sync`` after an ingestion and a roster edit printed ``canon_report_failed … min() arg is an empty
sequence``)."""

from continuity.retcon import changes_differing


def test_the_same_changes_in_another_order_differ_where_the_lists_part():
    a = ((3, "set", "location", "剑冢"), (5, "set", "mood", "决意"), (8, "set", "location", "雾海"))
    b = ((3, "set", "location", "剑冢"), (8, "set", "location", "雾海"), (5, "set", "mood", "决意"))
    assert set(a) == set(b)
    assert min(c[0] for c in changes_differing(a, b)) == 5


def test_a_change_counted_twice_differs_at_its_copy_and_a_changed_one_is_named():
    a = ((3, "set", "mood", "决意"),)
    b = ((3, "set", "mood", "决意"), (3, "set", "mood", "决意"))
    assert changes_differing(a, b) == {(3, "set", "mood", "决意")}
    assert changes_differing(a, ((4, "set", "mood", "犹豫"),)) == {
        (3, "set", "mood", "决意"),
        (4, "set", "mood", "犹豫"),
    }
