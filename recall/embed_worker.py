"""A worker process of a whole-book embedding pass (``recall.vectors._pool_add``): reads its job as JSON on
stdin, writes the count of texts done after each batch on stdout."""

import json
import sys

from recall.vectors import worker_run

if __name__ == "__main__":
    worker_run(json.load(sys.stdin), sys.stdout)
