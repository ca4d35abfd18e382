"""Domain exceptions shared by every app.

Services and selectors raise these; the API turns them into ``{"message", "extra"}`` JSON with the
status below, and management commands print the message on stderr and exit non-zero. Messages are
for authors, so they are in Chinese and name the thing that was not found / is ambiguous / is bad.
"""

from typing import Any


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str, *, extra: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra if extra is not None else {}

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "extra": self.extra}


class NotFound(DomainError):
    status_code = 404


class Ambiguous(DomainError):
    status_code = 409


class Conflict(DomainError):
    status_code = 409


class InvalidInput(DomainError):
    status_code = 422


class PermissionDenied(DomainError):
    status_code = 403


# A busy database: a writer waited its whole busy timeout (SQLite "database is locked") or lock
# timeout (PostgreSQL) behind another writer. Not the caller's fault and not a bug: a 503 with
# Retry-After on the API and the dashboard.
DATABASE_BUSY_MESSAGE = "数据库正忙：另一个写操作（如重建整本书）持有锁，本次请求未写入任何内容，请稍后重试"
DATABASE_BUSY_RETRY_AFTER = 5
# PostgreSQL SQLSTATEs of a lock wait given up: lock_not_available (lock_timeout, NOWAIT),
# deadlock_detected, serialization_failure; query_canceled covers a statement_timeout.
_PG_BUSY_STATES = {"55P03", "40P01", "40001", "57014"}


def database_busy(exc: BaseException) -> bool:
    """Whether a database error means "locked by another writer, retry later" (either engine)."""
    for err in (exc, exc.__cause__):
        if err is None:
            continue
        if getattr(err, "sqlstate", None) in _PG_BUSY_STATES:
            return True
        text = str(err).lower()
        if "database is locked" in text or "database table is locked" in text or "database is busy" in text:
            return True
    return False


class RateLimited(DomainError):
    """Too many calls of one kind by one caller; ``retry_after`` seconds go into the Retry-After header."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int, extra: Any = None) -> None:
        super().__init__(message, extra={"retry_after": retry_after, **(extra or {})})
        self.retry_after = retry_after
