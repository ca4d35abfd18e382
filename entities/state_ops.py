"""Pure replay of state changes: the one definition of what set / unset / add / remove / inc mean.

State is never stored: the state of an entity at chapter N is ``base_state`` with every change of
chapters <= N applied in (chapter, seq, id) order. Replay never fails: a write is validated when
it is made (``entities.services.writes``); if a later edit of an earlier chapter makes an ``inc`` meet a
non-number, the value is left as it is and the write path reports it.
"""

import copy
from collections.abc import Iterable
from typing import Any

OPS = ("set", "unset", "add", "remove", "inc")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def op_apply(state: dict, *, op: str, field: str, value: Any) -> None:
    """Apply one operation to ``state`` in place."""
    if op == "set":
        state[field] = copy.deepcopy(value)
    elif op == "unset":
        state.pop(field, None)
    elif op == "add":
        current = state.get(field)
        items = [] if current is None else list(current) if isinstance(current, list) else [current]
        if value not in items:
            items.append(copy.deepcopy(value))
        state[field] = items
    elif op == "remove":
        current = state.get(field)
        if isinstance(current, list):
            state[field] = [item for item in current if item != value]
        elif current == value:
            state.pop(field, None)
    elif op == "inc":
        current = state.get(field, 0)
        if current is None:
            current = 0
        if is_number(current) and is_number(value):
            state[field] = current + value
    else:  # pragma: no cover - ops are validated on write
        raise ValueError(op)


def state_replay(base: dict | None, changes: Iterable[Any]) -> dict:
    """Replay ``changes`` (objects or dicts with op, field, new) over a copy of ``base``."""
    state = copy.deepcopy(base or {})
    for change in changes:
        if isinstance(change, dict):
            op_apply(state, op=change.get("op", "set"), field=change["field"], value=change.get("new"))
        else:
            op_apply(state, op=change.op, field=change.field, value=change.new)
    return state
