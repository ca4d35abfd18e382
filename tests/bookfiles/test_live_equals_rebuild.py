"""Live equals rebuild, always (issue 24): the model-based test of every write door
(tests/bookfiles/live_machine.py) with a fixed, modest budget; bench/bench_live_rebuild.py runs it long."""

import os

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.bookfiles.live_machine import LiveEqualsRebuild
from tests.conftest import DEMO_BOOK_SOURCE

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXAMPLES = int(os.environ.get("LIVE_REBUILD_EXAMPLES", "4"))
STEPS = int(os.environ.get("LIVE_REBUILD_STEPS", "8"))


@pytest.mark.skipif(not (DEMO_BOOK_SOURCE / "book.yaml").is_file(), reason="the demo book is absent")
def test_every_write_door_keeps_live_equal_to_a_rebuild():
    run_state_machine_as_test(
        LiveEqualsRebuild,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: a step is a rebuild
            suppress_health_check=list(HealthCheck),
        ),
    )
