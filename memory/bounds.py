"""The memory reads' bounds, in a module of their own: the read declarations (memory/interfaces.py) state
them without importing the context pack's machinery, which a ``story`` process only needs for the pack."""

TASKS = ("write", "review", "query")
DEFAULT_BUDGET = 4000
MIN_BUDGET = 100
MAX_BUDGET = 200_000
FACT_LIST_MAX = 2000
