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
