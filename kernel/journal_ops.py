"""The registry of journaled writes: one declaration per journal op, in the app that owns the write.

A write that does not come from the author's files is journaled (``core.journal.journal_append``) so a
rebuild into an empty database gives it back. Each op is declared once, next to its replayer, in its
app's ``journal_ops.py``::

    @journal_op("entity.merge", service=entity_merge, schema="entities.schemas:MergeIn")
    def _entity_merge(book, data, event): ...

and the app registers that module here from its ``AppConfig.ready()`` (``journal_ops_register``). The
book-files app replays and heals the journal through this registry (``bookfiles.rebuilder.journal_replay``)
and imports no app's services: the replayers live with the services they call.

The modules are named, not imported, in ``ready()``: they import their app's services (ingestion,
curation, memory), which no ``django.setup()`` of a plain read should pay for. They are imported on
the first look-up (``journal_ops_load``), once. A registered module must be inside the registering
app: a registration never reaches across a layer.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import Any

# (book, the event's attachment or None, the event) — plus ``state=`` for an op with a ``run_state``
Replayer = Callable[..., None]


@dataclass(frozen=True)
class WriteDoor:
    """The doors of a journaled write, generated from the op's declaration: its MCP tool
    (``agents/writes.py``) and, when it has a ``path``, its REST POST (``webnovel/api.py::writes_mount``,
    on the declaring app's router). Both validate the op's ``schema`` (the REST body), call ``run`` and
    shape its answer by ``response``."""

    tool: str  # the tool's name
    description: str  # what it is for, when to call it, what it returns (for a model)
    run: Callable[..., Any]  # (book, the validated body[, pk=]) → the answer before shaping
    response: str  # "module:Schema" of the answer
    pk: str = ""  # the description of a leading ``pk`` argument (REST's path parameter), when it has one
    annotations: tuple[tuple[str, bool], ...] = ()
    # Where its tool stands among the write tools (lower first; the chapter loop's order: the queue,
    # then memory, then the setting); equal orders keep the apps' order (INSTALLED_APPS).
    order: int = 100
    # Its REST POST: the path under /api/books/{book} ("/memory/facts"; ``{pk}`` when ``pk`` is set),
    # the OpenAPI summary and description, the status of a success, the body parameter's name (it
    # names a bad field in a 422: ``body.<name>.<field>``) and the operation's name (its operationId
    # is ``<app>_api_<name>``).
    path: str = ""
    summary: str = ""
    doc: str = ""
    status: int = 200
    body: str = "body"
    name: str = ""


@dataclass(frozen=True)
class JournalOp:
    """What the journal needs of one op. ``replay`` applies the event again through the op's service
    (with ``journal=False``, so a replay never journals again)."""

    op: str
    replay: Replayer
    service: Callable[..., Any] | None = None  # the service that writes and journals the op
    schema: str = ""  # "module:Schema", the input schema of its REST door, where it has one
    help: str = ""
    # Consecutive events of the op share what ``run_state(book)`` loads (passed as ``state=``): a run of
    # ingestions does not look up the book's names per event.
    run_state: Callable[[Any], Any] | None = None
    # False: the replayer is one atomic block itself (no second savepoint around it)
    savepoint: bool = True
    # True: the op's service runs the after-chapter hooks of the event's ``chapter`` itself; a replay
    # that follows what it applied schedules them (``journal_follow`` does not: the op follows itself)
    follows_chapter: bool = False
    # An applied attachment the author edited: ``reapply(book, event, data, events)`` applies it again (the
    # journal's events given, for the later ones that act on what it made), and
    # ``reapply_orphans(event, data, events)`` names the later events its new content no longer holds.
    reapply: Callable[[Any, dict[str, Any], Any, list[dict[str, Any]]], None] | None = None
    reapply_orphans: Callable[[dict[str, Any], Any, list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    door: WriteDoor | None = None  # its agents' door, when agents call it

    @property
    def app(self) -> str:
        """The top-level package that declares the op."""
        return self.replay.__module__.split(".")[0]


REGISTRY: dict[str, JournalOp] = {}
_modules: list[str] = []
_loaded: set[str] = set()
_wrappers: list[Callable[[Any], Any]] = []


def _caller_app(depth: int = 2) -> str:
    return sys._getframe(depth).f_globals.get("__name__", "").split(".")[0]


def journal_op(
    op: str,
    *,
    service: Callable[..., Any] | None = None,
    schema: str = "",
    help: str = "",
    run_state: Callable[[Any], Any] | None = None,
    savepoint: bool = True,
    follows_chapter: bool = False,
    reapply: Callable[[Any, dict[str, Any], Any, list[dict[str, Any]]], None] | None = None,
    reapply_orphans: Callable[[dict[str, Any], Any, list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
    door: WriteDoor | None = None,
) -> Callable[[Replayer], Replayer]:
    """Declare the journal op ``op`` with the decorated function as its replayer. An op declared twice
    (by two functions) is refused: the log would not say which one replays it. A ``door`` declares the
    op's MCP tool; it needs a ``schema``."""
    if door is not None and not schema:
        raise RuntimeError(f"journal op {op!r}: a door needs the input schema it validates with")

    def register(fn: Replayer) -> Replayer:
        known = REGISTRY.get(op)
        if known is not None and (known.replay.__module__, known.replay.__qualname__) != (
            fn.__module__,
            fn.__qualname__,
        ):
            raise RuntimeError(
                f"journal op {op!r} registered twice: {known.replay.__module__}.{known.replay.__qualname__} "
                f"and {fn.__module__}.{fn.__qualname__}"
            )
        REGISTRY[op] = JournalOp(
            op=op,
            replay=fn,
            service=service,
            schema=schema,
            help=help,
            run_state=run_state,
            savepoint=savepoint,
            follows_chapter=follows_chapter,
            reapply=reapply,
            reapply_orphans=reapply_orphans,
            door=door,
        )
        return fn

    return register


def journal_ops_register(module: str) -> None:
    """Register ``module`` (the calling app's own ``journal_ops``, by dotted path) as declaring journal
    ops; called from ``AppConfig.ready()``. Imported on the first look-up, not now."""
    app = _caller_app()
    if module.split(".")[0] != app:
        raise RuntimeError(f"journal ops module {module} is outside {app}'s app (each app registers its own)")
    if module not in _modules:
        _modules.append(module)


def journal_ops_load() -> dict[str, JournalOp]:
    """Import every registered module once and return the registry (op → declaration)."""
    for module in _modules:
        if module not in _loaded:
            import_module(module)
            _loaded.add(module)
    return REGISTRY


def journal_op_get(op: str) -> JournalOp | None:
    """The declaration of ``op``, or None for an op no installed app declares."""
    return journal_ops_load().get(op)


def journal_replay_wrap(factory: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Declare a context manager ``factory(book=book)`` that wraps every replay or heal of a book (the
    entities app's ``mentions_follow``: names the events add are scanned for once, at the end)."""
    if factory not in _wrappers:
        _wrappers.append(factory)
    return factory


@contextmanager
def journal_replay_wrapped(*, book: Any) -> Iterator[None]:
    """Every declared wrapper around one replay of ``book``, in the order the apps declared them."""
    journal_ops_load()
    with ExitStack() as stack:
        for factory in _wrappers:
            stack.enter_context(factory(book=book))
        yield
