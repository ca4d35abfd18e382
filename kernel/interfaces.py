"""The registry of read interfaces: one declaration per interface, served by two front doors.

Each app declares its interfaces in ``<app>/interfaces.py`` with ``@interface(...)`` on a selector
(or a thin wrapper around one). The selector is called as ``fn(book=<Book>, **args)`` and returns
JSON-able data (or a ``str`` for text interfaces). ``python manage.py story <name> <book> …`` builds
its arguments from this registry, and the REST endpoint of the same interface calls the same
selector, so both doors give the same answer (tests/core/test_interfaces_parity.py checks it).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from django.apps import apps


@dataclass(frozen=True)
class Arg:
    """One argument of an interface. Positional args come after the book slug on the CLI."""

    name: str
    type: type = str
    required: bool = False
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    positional: bool = False
    many: bool = False


@dataclass(frozen=True)
class Interface:
    name: str
    fn: Callable[..., Any]
    help: str
    args: tuple[Arg, ...] = field(default_factory=tuple)
    text: bool = False
    group: str = ""
    rest: str = ""  # the REST path (documentation only), e.g. "GET /api/books/{book}/threads/{thread_id}"


REGISTRY: dict[str, Interface] = {}


def interface(
    name: str, *, help: str, args: tuple[Arg, ...] = (), text: bool = False, group: str = "", rest: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the read interface ``name``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY and REGISTRY[name].fn is not fn:
            raise RuntimeError(f"interface {name!r} registered twice")
        REGISTRY[name] = Interface(name=name, fn=fn, help=help, args=tuple(args), text=text, group=group, rest=rest)
        return fn

    return register


def interfaces_load() -> dict[str, Interface]:
    """Import every installed app's ``interfaces`` module once and return the registry."""
    for config in apps.get_app_configs():
        module = f"{config.name}.interfaces"
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return REGISTRY
