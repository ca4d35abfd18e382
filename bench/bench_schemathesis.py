"""Long fuzzing runs: the schema-driven API fuzzer and the parser property tests of
tests/hardening with many more examples than CI uses, on SQLite or (with ``$DATABASE_URL``) on
PostgreSQL. Prints the number of API calls tried, their statuses, and whether any 500 or parser
exception appeared (the run stops at the first one, with hypothesis' minimal failing example).

    python bench/bench_schemathesis.py [--quick] [--json] [--calls 5000] [--scale 20]

(Named after schemathesis, which does the same from the OpenAPI schema; its releases pin other
versions of our dependencies, so the fuzzer is hypothesis over ``api.get_openapi_schema()``.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 API calls, parser scale 3")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="accepted for run_all.py (nothing to keep)")
    parser.add_argument("--calls", type=int, default=5000, help="generated API calls")
    parser.add_argument("--scale", type=int, default=20, help="multiplier of the parser tests' examples")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.calls, opts.scale = 1000, 3
    tally_file = Path(tempfile.mkdtemp(prefix="wn-fuzz-")) / "tally.json"
    env = {
        **os.environ,
        "HARDENING_EXAMPLES": str(opts.calls),
        "HARDENING_SCALE": str(opts.scale),
        "HARDENING_TALLY": str(tally_file),
    }
    load_start = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "tests/hardening/test_openapi_fuzz.py", "tests/hardening/test_fuzz_parsers.py",
        ],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    seconds = time.monotonic() - start
    tally = json.loads(tally_file.read_text()) if tally_file.exists() else {}
    summary = [line for line in proc.stdout.splitlines() if " passed" in line or " failed" in line]
    figures = {
        "database": (os.environ.get("DATABASE_URL") or "sqlite").split(":", 1)[0],
        "api_operations": tally.get("operations"),
        "api_calls": tally.get("calls"),
        "api_statuses": tally.get("statuses"),
        "parser_examples_per_test": {"fast": 150 * opts.scale, "slow": 40 * opts.scale},
        "pytest": summary[-1] if summary else proc.stdout[-500:],
        "ok": proc.returncode == 0,
        "seconds": round(seconds, 1),
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],
    }
    if opts.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
    else:
        print(f"fuzzing on {figures['database']} ({figures['seconds']} s, load average {figures['load_average']})")
        print(
            f"  API: {figures['api_calls']} calls over {figures['api_operations']} operations, statuses {figures['api_statuses']}"
        )
        print(f"  parsers: {figures['parser_examples_per_test']} examples per property")
        print(f"  pytest: {figures['pytest']}")
    if proc.returncode != 0:
        print(proc.stdout[-6000:], file=sys.stderr)
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
