"""A small in-process rate limiter: at most ``count`` events per ``seconds`` for one caller.

For the two places where one caller can burn a worker or guess a password: regex search (each
call may run the full 2-second regex budget) and the admin login. It lives in each process's
memory — with N gunicorn workers a caller gets up to N × the limit, and a restart forgets it —
which bounds the damage without a cache server; docs/hardening.md §6.4 says so. Kernel module.
"""

import threading
import time
from collections import deque

_MAX_CALLERS = 10_000


class RateLimit:
    """Sliding window per caller; thread-safe; forgets the oldest callers past ``_MAX_CALLERS``."""

    def __init__(self, *, count: int, seconds: float) -> None:
        self.count, self.seconds = count, seconds
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _window(self, caller: str, now: float) -> deque[float]:
        events = self._events.get(caller)
        if events is None:
            if len(self._events) >= _MAX_CALLERS:
                self._events.pop(next(iter(self._events)))
            events = self._events[caller] = deque()
        while events and events[0] <= now - self.seconds:
            events.popleft()
        return events

    def wait(self, caller: str) -> float:
        """Seconds until ``caller`` may act again (0: now), without counting an event."""
        with self._lock:
            now = time.monotonic()
            events = self._window(caller, now)
            return 0.0 if len(events) < self.count else events[0] + self.seconds - now

    def hit(self, caller: str) -> float:
        """Count one event for ``caller`` if allowed; return 0, or the seconds to wait (not counted)."""
        with self._lock:
            now = time.monotonic()
            events = self._window(caller, now)
            if len(events) >= self.count:
                return events[0] + self.seconds - now
            events.append(now)
            return 0.0

    def clear(self, caller: str) -> None:
        with self._lock:
            self._events.pop(caller, None)


def rate_parse(text: str) -> tuple[int, float]:
    """``"60/60"`` → (60 events, 60 seconds)."""
    count, _, seconds = text.partition("/")
    return int(count), float(seconds or 60)


_limiters: dict[str, RateLimit] = {}
_limiters_lock = threading.Lock()


def limiter_for(rate: str) -> RateLimit:
    """The process's one limiter for a ``"count/seconds"`` rate (a changed setting gets a new one)."""
    with _limiters_lock:
        limiter = _limiters.get(rate)
        if limiter is None:
            count, seconds = rate_parse(rate)
            limiter = _limiters[rate] = RateLimit(count=count, seconds=seconds)
        return limiter
