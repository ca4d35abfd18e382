"""Blind planted sets for the continuity check (bench/bench_check_blind.py): each module declares a
book's canon, its planted contradictions and its silent controls; the text is read at run time."""
