"""The answer type a read declares (``Interface.response``, kernel/interfaces.py), resolved to Python:
one resolver for REST (webnovel/api.py: the operation's response schema) and MCP (agents/reads.py: the
tool's output schema), so the two doors never read one declaration two ways.

A declaration is a name or a ``|`` union of names: ``module:Schema`` (imported on first use, so the
kernel imports no app), ``list[...]`` of a name, ``dict`` (any JSON object) or ``str``.
"""

from functools import reduce
from importlib import import_module
from operator import or_
from typing import Any


def response_type(name: str) -> Any:
    """The Python type one declared name stands for."""
    name = name.strip()
    if name in {"", "dict"}:
        return dict[str, Any]
    if name == "str":
        return str
    if name.startswith("list[") and name.endswith("]"):
        return list[response_type(name[5:-1])]
    module, _, attr = name.partition(":")
    return getattr(import_module(module), attr)


def response_union(declaration: str, *also: Any) -> Any:
    """The union of every name of ``declaration`` (and of the types ``also``, e.g. ``str`` for a read that
    may answer text)."""
    return reduce(or_, [*(response_type(part) for part in declaration.split("|")), *also])
