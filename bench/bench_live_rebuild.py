"""The long run of the model-based test of every write door (issue 24): live equals rebuild.

    python bench/bench_live_rebuild.py [--sequences 1000] [--steps 30] [--json] [--quick]

Runs ``tests/bookfiles/live_machine.py::LiveEqualsRebuild`` (hypothesis ``RuleBasedStateMachine``) on a
copy of the demo book in a throwaway SQLite database (or ``$DATABASE_URL``), ``--sequences`` sequences of
up to ``--steps`` writes each; after every step the live database is compared with a rebuild of the
same folder into an empty database (every table, ids and timestamps aside, and ``dump_book``), and a
sync with nothing changed must change nothing. A divergence does not stop the run: it is counted and
printed with the steps that led to it. Prints sequences and steps tried, divergences, seconds per step.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Bench, django_setup  # noqa: E402


def main() -> int:
    bench = Bench("live_rebuild", description=__doc__)
    bench.parser.add_argument("--sequences", type=int, default=1000, help="how many sequences of writes")
    bench.parser.add_argument("--steps", type=int, default=30, help="the most writes in one sequence")
    bench.parser.add_argument(
        "--recall", action="store_true", help="embed chunks and facts (off by default: vectors are in no table)"
    )
    args = bench.args
    sequences, steps = (3, 5) if args.quick else (args.sequences, args.steps)
    if not args.recall:  # as under pytest (tests/conftest.py): the vectors are a file cache, no table holds them
        os.environ["WEBNOVEL_RECALL"] = "off"
    django_setup(bench.database(label="db-live"))
    # imported once Django is set up (the machine imports models)
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from entities.discovery import engine
    from tests.bookfiles.live_machine import LiveEqualsRebuild

    # jieba's pass is a pure function of the text (its dictionary never changes at run time): remembered,
    # a discovery step re-segments only the chapters that changed
    engine.jieba_segment = functools.lru_cache(maxsize=4096)(engine.jieba_segment)
    found: list[dict] = []
    LiveEqualsRebuild.record = found
    started = time.perf_counter()
    machine = LiveEqualsRebuild
    machine.snapshot = True
    machine.child_db = os.environ["DATABASE_URL"]  # a file database (or $DATABASE_URL): children can open it
    machine.TestCase.settings = settings(
        max_examples=sequences,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    bench.log(f"{sequences} sequences of up to {steps} steps")
    run_state_machine_as_test(machine, settings=machine.TestCase.settings)
    seconds = time.perf_counter() - started
    counts = LiveEqualsRebuild.counts
    bench.table(
        "live equals rebuild — the model-based test's long run (demo book)",
        [
            {
                "sequences": counts["sequences"],
                "steps checked": counts["steps"],
                "divergences": len(found),
                "writers killed": counts.get("killed", 0),
                "seconds": round(seconds, 1),
                "s / step": round(seconds / max(counts["steps"], 1), 2),
            }
        ],
    )
    for item in found[:20]:
        bench.note(f"DIVERGED ({item['invariant']}) after: {' → '.join(item['steps'])}")
        for line in item["diff"]:
            bench.note(f"    {line[:300]}")
    bench.extra["divergences"] = found
    return bench.finish() or (1 if found else 0)


if __name__ == "__main__":
    sys.exit(main())
