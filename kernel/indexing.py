"""Extra chapter indexers, after-chapter hooks and canon-change reporters, registered by the apps that
plug in (search index, mention scan, recall, memory, the continuity check) from their
``AppConfig.ready()``, so the core never imports them: ``chapter_indexer_register``,
``after_chapter_hook_register``, ``canon_change_reporter_register``, each with the registering app's own
dotted path (imported on first use: a read's ``django.setup()`` does not load the memory pipeline), run
in the order the apps are installed. A setting of the same name, when it is defined, replaces a list
(``WEBNOVEL_AFTER_CHAPTER_HOOKS = []`` in a test that wants no hook, or a test's own hook): an override,
never how an app joins.

- indexers (``WEBNOVEL_CHAPTER_INDEXERS``): called inside the rebuild / finalize / sync transaction
  after the core tables are written, as ``fn(book=book, numbers=[...] or None, removed=[...])``
  (``numbers=None`` means "every chapter"). An exception aborts the whole transaction. An indexer
  may return a dict whose ``warnings`` (report issue dicts: code, file, line, message) join the
  report (the mention indexer's skipped manual tags).
- hooks (``WEBNOVEL_AFTER_CHAPTER_HOOKS``): same signature, called after commit, best effort: an exception
  never undoes the committed chapter, but it is not silent either — it is logged and recorded in the
  caller's report under ``hook_failures`` (``[{"hook": path, "message": …}]``), which the commands
  print and REST returns, so "成功" is never shown over a memory that stopped following the book.
- reporters (``WEBNOVEL_CANON_CHANGE_REPORTERS``): called inside the finalize / sync transaction
  *before* any row is replaced, as ``fn(book=book, numbers=[...], paths=[...])`` (the chapter numbers
  being written, every file path written or removed). A reporter snapshots what it needs of the old
  canon and returns None (nothing to report) or a ``finish()`` callable, called after the writes and
  the indexers, still inside the transaction, that returns a dict of what the change did to *other*
  chapters: ``{"from": N, "checked": n, "skipped": "…"?, "findings": [{"chapter", "file", "line",
  "kind", "kind_label", "severity", "quote", "message", "evidence", "suggestion"}]}`` (the findings
  those chapters have now and did not have before). The dicts land in ``report["canon_changes"]``.
  A reporter that raises never fails the write: its message joins ``report["warnings"]``
  (code ``canon_report_failed``). The continuity check registers the one the project has.
"""

import logging
import sys
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Model
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


INDEXERS = "WEBNOVEL_CHAPTER_INDEXERS"
HOOKS = "WEBNOVEL_AFTER_CHAPTER_HOOKS"
REPORTERS = "WEBNOVEL_CANON_CHANGE_REPORTERS"
_registered: dict[str, list[str]] = {INDEXERS: [], HOOKS: [], REPORTERS: []}


def _register(kind: str, path: str) -> None:
    app = sys._getframe(2).f_globals.get("__name__", "").split(".")[0]
    if path.split(".")[0] != app:
        raise RuntimeError(f"{path} is outside {app}'s app (each app registers its own functions)")
    if path not in _registered[kind]:
        _registered[kind].append(path)


def chapter_indexer_register(path: str) -> None:
    """Run ``path`` (the calling app's function) inside every rebuild / finalize / sync transaction."""
    _register(INDEXERS, path)


def after_chapter_hook_register(path: str) -> None:
    """Run ``path`` (the calling app's function) after the commit of every chapter write."""
    _register(HOOKS, path)


def canon_change_reporter_register(path: str) -> None:
    """Call ``path`` (the calling app's function) around every finalize / sync."""
    _register(REPORTERS, path)


def registered(kind: str) -> list[str]:
    """The dotted paths of one list (``INDEXERS``, ``HOOKS``, ``REPORTERS``) as they run now: the setting
    of that name when one is defined (an override), else the apps' registrations."""
    override = getattr(settings, kind, None)
    return list(_registered[kind] if override is None else override)


def _load(setting: str) -> list[tuple[str, Callable[..., object]]]:
    return [(path, import_string(path)) for path in registered(setting)]


def chapter_indexers_run(
    *, book: Model, numbers: list[int] | None, removed: list[int], warnings: list[dict] | None = None
) -> list[str]:
    """Run every configured indexer (inside the caller's transaction); returns their dotted paths and
    appends the warnings they return to ``warnings``."""
    ran = []
    for path, fn in _load("WEBNOVEL_CHAPTER_INDEXERS"):
        result = fn(book=book, numbers=numbers, removed=removed)
        if warnings is not None and isinstance(result, dict):
            warnings += result.get("warnings") or []
        ran.append(path)
    return ran


def hook_failure_message(*, book: Model, path: str, exc: BaseException) -> str:
    """The Chinese line an author reads when an after-commit hook failed (the writes are kept)."""
    return (
        f"提交后的更新 {path} 失败：{type(exc).__name__}: {exc}。已写入的数据保留；"
        f"修复后重跑本命令，或运行 manage.py memory_health {book.slug} --refresh 补上"
    )


def follow_up_store_register(*, add: str, done: str) -> None:
    """Where a scheduled hook run is recorded durably (the calling app's functions): ``add(book=, numbers=,
    removed=, entities=)`` inside the write's transaction returns a token, ``done(pk=token)`` once the
    hooks ran without failing. The core registers ``core.followups``; without one, hooks are best effort."""
    app = sys._getframe(1).f_globals.get("__name__", "").split(".")[0]
    if add.split(".")[0] != app or done.split(".")[0] != app:
        raise RuntimeError(f"{add} / {done} are outside {app}'s app (each app registers its own functions)")
    _store["add"], _store["done"] = add, done


_store: dict[str, str] = {}


def after_chapter_hooks_run(
    *,
    book: Model,
    numbers: list[int] | None,
    removed: list[int],
    report: dict[str, Any] | None = None,
    entities: list[str] | None = None,
    hooks: list[tuple[str, Callable[..., object]]] | None = None,
) -> bool:
    """Run every configured hook now; True when none failed. A failure is logged and appended to
    ``report["hook_failures"]`` (when a report is given), never raised."""
    extra = {"entities": entities} if entities else {}
    ok = True
    for path, fn in _load("WEBNOVEL_AFTER_CHAPTER_HOOKS") if hooks is None else hooks:
        try:
            fn(book=book, numbers=numbers, removed=removed, **extra)
        except Exception as exc:  # best effort by design: a hook never fails a committed chapter
            ok = False
            logger.warning("after-chapter hook %s failed for book %s", path, book.slug, exc_info=True)
            if report is not None:
                report.setdefault("hook_failures", []).append(
                    {"hook": path, "message": hook_failure_message(book=book, path=path, exc=exc)}
                )
    return ok


def after_chapter_hooks_schedule(
    *,
    book: Model,
    numbers: list[int] | None,
    removed: list[int],
    report: dict[str, Any] | None = None,
    entities: list[str] | None = None,
) -> list[str]:
    """Schedule every configured hook for after the commit. A failure never raises (the chapter is
    committed by then); it is logged and appended to ``report["hook_failures"]`` when a report is
    given — the caller returns that dict after its transaction, so the failure reaches its answer.
    ``entities`` (entity ids) names the entities a curator's write changed as a whole (a merge, a
    rename): a hook re-derives every chapter that depends on them, not only ``numbers``. With a
    registered store (``follow_up_store_register``) the run is recorded in the caller's transaction
    and the record dropped once the hooks succeeded: a run a killed writer never made is made by the
    next sync."""
    hooks = _load("WEBNOVEL_AFTER_CHAPTER_HOOKS")
    if report is not None:
        report["hook_failures"] = []
    token = None
    if hooks and _store:
        token = import_string(_store["add"])(book=book, numbers=numbers, removed=removed, entities=entities or [])

    def run() -> None:
        ok = after_chapter_hooks_run(
            book=book, numbers=numbers, removed=removed, report=report, entities=entities, hooks=hooks
        )
        if ok and token is not None:
            import_string(_store["done"])(pk=token)

    if hooks:
        transaction.on_commit(run)
    return [path for path, _ in hooks]


def canon_change_reporters_begin(*, book: Model, numbers: list[int], paths: list[str]) -> list[tuple[str, Any]]:
    """Call every configured canon-change reporter before the write; returns (path, finish or the
    exception it raised) pairs for ``canon_change_reporters_finish``."""
    started: list[tuple[str, Any]] = []
    for path, fn in _load("WEBNOVEL_CANON_CHANGE_REPORTERS"):
        try:
            with transaction.atomic():
                finish = fn(book=book, numbers=numbers, paths=paths)
        except Exception as exc:  # best effort, as below
            logger.warning("canon-change reporter %s failed", path, exc_info=True)
            started.append((path, exc))
            continue
        if finish is not None:
            started.append((path, finish))
    return started


def canon_change_reporters_finish(*, started: list[tuple[str, Any]], report: dict[str, Any]) -> None:
    """Collect what the started reporters found after the write into ``report["canon_changes"]``.

    Best effort: a failing reporter is logged and named in ``report["warnings"]``, the write stands."""
    report["canon_changes"] = []
    for path, finish in started:
        try:
            if isinstance(finish, Exception):
                raise finish
            # a savepoint: a reporter's failed query must not poison the caller's transaction
            with transaction.atomic():
                result = finish()
        except Exception as exc:  # best effort by design: a report never fails the write it reports on
            logger.warning("canon-change reporter %s failed", path, exc_info=True)
            report.setdefault("warnings", []).append(
                {
                    "code": "canon_report_failed",
                    "file": "",
                    "line": None,
                    "message": f"设定变化对其他章节的影响未能检查（{path}）：{type(exc).__name__}: {exc}",
                }
            )
            continue
        if result:
            report["canon_changes"].append({"reporter": path, **result})
