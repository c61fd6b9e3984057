"""A worker's thread shares per queue (``run_cadence --queues reports:2,default``).

A queue given a share may hold at most that many of the worker's tries at once (running,
waiting for a thread, or claimed ahead), so long tries of one queue cannot take every thread
from the others. A queue without a share takes any free thread. The engine asks, before each
claim, which queues may still take tries and how many (``open``); the claim keeps to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from ..schedule.queues import InvalidQueue, QueueShare, served_names
from .claims import Claim


class OpenQueues(NamedTuple):
    """The queues a claim may take from now (None: every queue), and the free share of each
    queue that has one."""

    names: tuple[str, ...] | None
    limits: dict[str, int]


class QueueShares:
    """The queues a worker serves and the thread share of each (None: every queue, no share)."""

    def __init__(self, shares: tuple[QueueShare, ...] | None) -> None:
        self.shares = shares
        self.names = served_names(shares)
        self._limits = {s.name: s.threads for s in shares or () if s.threads is not None}

    def concurrency(self) -> int | None:
        """The threads the shares add up to when every queue has one (Oban's per-queue
        limits); None when some queue has none, and the worker's concurrency decides."""
        if not self.shares or len(self._limits) < len(self.shares):
            return None
        return sum(self._limits.values())

    def check(self, concurrency: int) -> None:
        """Refuse a share larger than the worker's threads: it could never be reached."""
        for name, threads in sorted(self._limits.items()):
            if threads > concurrency:
                raise InvalidQueue(
                    f"--queues gives {name} {threads} threads, more than the worker's "
                    f"{concurrency} (--concurrency)."
                )

    def open(self, held: Iterable[Claim]) -> OpenQueues:
        """Which queues may take more tries, given the tries this worker holds."""
        if not self._limits:
            return OpenQueues(self.names, {})
        taken = Counter(claim.queue for claim in held)
        free = {name: max(0, limit - taken[name]) for name, limit in self._limits.items()}
        assert self.names is not None  # shares are only given with names
        names = tuple(name for name in self.names if free.get(name, 1) > 0)
        return OpenQueues(names, {name: n for name, n in free.items() if n > 0})
