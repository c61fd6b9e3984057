"""Threads that will not stop: tries past their run-time limit whose job never returned.

A thread cannot be stopped from outside. A try past its limit is recorded as failed and its
slot is given back (the pool starts a new thread beside it); the thread is kept here, apart,
until its job returns, if ever. The worker reports how many it holds and since when in its
heartbeat; past ``CADENCE_STUCK_THREADS_LIMIT`` it is unhealthy and drains and exits, so that
its supervisor starts a fresh process (docs/design.md, "Stuck threads").
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from .tuning import STUCK_AFTER


@dataclass(frozen=True)
class StuckThread:
    attempt_id: int
    schedule_name: str
    since: datetime  # when its try was recorded as timed out


class StuckThreads:
    """The stuck threads of one worker, by claim token; safe to use from any thread."""

    def __init__(self) -> None:
        self._by_token: dict[str, StuckThread] = {}
        self._lock = threading.Lock()

    def add(self, token: str, thread: StuckThread) -> None:
        with self._lock:
            self._by_token[token] = thread

    def discard(self, token: str) -> None:
        """Its job returned at last: the thread is back to the pool, no longer stuck."""
        with self._lock:
            self._by_token.pop(token, None)

    def stuck(self, now: datetime) -> list[StuckThread]:
        """The threads still in their job ``STUCK_AFTER`` after their try timed out."""
        with self._lock:
            return [t for t in self._by_token.values() if now - t.since >= STUCK_AFTER]

    def count(self, now: datetime) -> int:
        return len(self.stuck(now))

    def since(self, now: datetime) -> datetime | None:
        """When the oldest stuck thread's try timed out; None when none is stuck."""
        return min((t.since for t in self.stuck(now)), default=None)

    def next_change(self, now: datetime) -> datetime | None:
        """When a thread not yet counted as stuck would be, if it has not returned by then."""
        with self._lock:
            return min(
                (
                    t.since + STUCK_AFTER
                    for t in self._by_token.values()
                    if now - t.since < STUCK_AFTER
                ),
                default=None,
            )

    def __len__(self) -> int:
        """Threads set apart, stuck or not yet."""
        with self._lock:
            return len(self._by_token)


def unhealthy(count: int, limit: int) -> bool:
    """Whether a worker holding ``count`` stuck threads must be replaced (``limit``: 0 never)."""
    return limit > 0 and count >= limit


def unhealthy_reason(count: int, limit: int) -> str:
    return f"{count} stuck thread(s), the limit is {limit} (CADENCE_STUCK_THREADS_LIMIT)"
