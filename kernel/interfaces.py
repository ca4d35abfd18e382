"""The registry of read interfaces: one declaration per read, from which every front door is generated.

Each app declares its reads in ``<app>/interfaces.py`` with ``interface(...)(selector)``. A declaration
holds everything a door needs — the name, the typed parameters with their bounds and choices, the REST
path, the response shape, a help line — and the doors are generated from it, never written by hand:

- REST: ``webnovel/api.py`` adds one GET operation per read to its app's router (``reads_mount``);
- CLI: ``python manage.py story <name> <book> …`` builds one subcommand per read;
- agents: the MCP server lists one tool per read.

The selector is called as ``fn(book=<Book>, **args)`` with the declared argument names and returns
JSON-able data (or a ``str`` for ``text`` reads). Reads have no side effects through any door. Bounds
are stated here for the schemas (OpenAPI, the tools' input schemas, the CLI's help); the selectors
enforce them with their own precise Chinese messages, from the same constants.

Nothing here imports Django models, ninja or pydantic: the response shape is a dotted name resolved only
when REST or MCP builds its schemas (kernel/responses.py), so a plain ``story`` read stays cheap to start. For the same reason a selector (and a
rendering) may be named by its dotted path inside the declaring app (``"memory.orchestrator.context_pack"``):
it is imported when the read is first called, so one ``story`` process imports the selector module of
the read it runs, not the heavy modules of all seventy (the context pack, the continuity check). The path
must stay inside the declaring app (``interface`` checks it): it defers an import, it never reaches
across a layer.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import import_module
from typing import Any

from django.apps import apps

from kernel.bounds import NUMBER_MAX
from kernel.exceptions import InvalidInput

BOOK_PREFIX = "/api/books/{book}"


@dataclass(frozen=True)
class Arg:
    """One parameter of a read. Positional args come after the book slug on the CLI; on REST an arg is a
    path parameter when the path names it, else a query parameter."""

    name: str
    type: type = str
    required: bool = False
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    positional: bool = False
    many: bool = False
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None

    def limits(self) -> dict[str, Any]:
        """The bounds as JSON-schema keywords (``minimum``, ``maxLength``, ``enum``…)."""
        out: dict[str, Any] = {}
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
        ):
            if value is not None:
                out[key] = value
        if self.choices:
            out["enum"] = list(self.choices)
        return out


@dataclass(frozen=True)
class Rendering:
    """Another rendering of a read's answer, chosen with ``format=<name>`` (``json`` is the answer itself).

    ``media``: the REST media type of the rendering (``text/markdown``); empty means a JSON string."""

    target: Callable[[Any], str] | str  # the function, or its dotted path inside the declaring app
    media: str = ""

    @property
    def render(self) -> Callable[[Any], str]:
        return target_resolve(self.target)


def target_resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """The function a declaration names: itself, or the attribute its dotted path names (imported now)."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.rpartition(".")
    return getattr(import_module(module), attr)


def target_module(target: Callable[..., Any] | str) -> str:
    """The module of a declared function, without importing it."""
    return target.rpartition(".")[0] if isinstance(target, str) else target.__module__


@dataclass(frozen=True)
class Interface:
    name: str
    target: Callable[..., Any] | str  # the selector, or its dotted path inside the declaring app
    help: str
    path: str  # under /api/books/{book}, e.g. "/threads/{thread_id}"
    args: tuple[Arg, ...] = field(default_factory=tuple)
    text: bool = False
    group: str = ""
    summary: str = ""  # the OpenAPI summary (default: help)
    response: str = ""  # "module:Schema", "list[module:Schema]", "dict" (any JSON); text reads: str
    formats: tuple[tuple[str, Rendering], ...] = ()
    rate: tuple[str, str] | None = None  # (settings name of the rate, what is limited) for costly reads

    @cached_property
    def fn(self) -> Callable[..., Any]:
        """The selector (a dotted ``target`` is imported on first use)."""
        return target_resolve(self.target)

    @property
    def rest(self) -> str:
        """The REST operation, e.g. ``GET /api/books/{book}/threads/{thread_id}``."""
        return f"GET {BOOK_PREFIX}{self.path}"

    @property
    def app(self) -> str:
        """The label of the app that declares the read (its router serves it, with that app's permissions)."""
        module = target_module(self.target)
        config = apps.get_containing_app_config(module)
        if config is None:
            raise RuntimeError(f"interface {self.name!r}: {module} is not in an installed app")
        return config.label

    def all_args(self) -> tuple[Arg, ...]:
        """The declared args, plus ``format`` when the read has other renderings."""
        if not self.formats:
            return self.args
        names = ("json", *(name for name, _ in self.formats))
        return (*self.args, Arg("format", str, default="json", choices=names, help="输出格式：" + " | ".join(names)))

    def call(self, *, book: Any, args: dict[str, Any]) -> Any:
        """The answer for ``args`` (every declared arg present): the selector's, rendered as asked."""
        params = dict(args)
        chosen = params.pop("format", "json") if self.formats else "json"
        rendering = self.rendering(chosen) if chosen != "json" else None  # an unknown format fails first
        result = self.fn(book=book, **params)
        return rendering.render(result) if rendering else result

    def rendering(self, name: str) -> Rendering:
        for key, rendering in self.formats:
            if key == name:
                return rendering
        names = " / ".join(("json", *(key for key, _ in self.formats)))
        raise InvalidInput(f"format 只能是 {names}（收到 {name}）", extra={"field": "format", "format": name})


# The chapter number of a read, the same everywhere (path ``{number}``, first positional on the CLI).
NUMBER = Arg("number", int, required=True, positional=True, minimum=1, maximum=NUMBER_MAX, help="章节号")

REGISTRY: dict[str, Interface] = {}


def interface(
    name: str,
    *,
    help: str,
    path: str,
    args: tuple[Arg, ...] = (),
    text: bool = False,
    group: str = "",
    summary: str = "",
    response: str = "",
    formats: dict[str, Rendering] | None = None,
    rate: tuple[str, str] | None = None,
) -> Callable[[Callable[..., Any] | str], Callable[..., Any] | str]:
    """Register ``fn`` (a function, or its dotted path inside the declaring app) as the read ``name``."""
    declared_in = sys._getframe(1).f_globals.get("__name__", "")

    def register(fn: Callable[..., Any] | str) -> Callable[..., Any] | str:
        if name in REGISTRY and REGISTRY[name].target != fn:
            raise RuntimeError(f"interface {name!r} registered twice")
        for target in (fn, *(r.target for r in (formats or {}).values())):
            if isinstance(target, str) and target.split(".")[0] != declared_in.split(".")[0]:
                raise RuntimeError(f"interface {name!r}: {target} is outside {declared_in}'s app (import it instead)")
        REGISTRY[name] = Interface(
            name=name,
            target=fn,
            help=help,
            path=path,
            args=tuple(args),
            text=text,
            group=group,
            summary=summary,
            response=response,
            formats=tuple((formats or {}).items()),
            rate=rate,
        )
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
